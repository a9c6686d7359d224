package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/slackinteract"
	"github.com/driftwatch/driftwatch/internal/store"
)

// auditRecorder is the server's audit recorder (server.Options.Audit):
// the daemon's store when it keeps an audit log (store.AuditStore), else
// nil (nothing is recorded, and GET /api/v1/audit answers 501).
func auditRecorder(st store.Store) server.AuditRecorder {
	if a, ok := st.(store.AuditStore); ok {
		return a
	}
	return nil
}

// slackAudit records the decisions asked through Slack's buttons
// (slackinteract.Options.OnDecision) in the audit log, as the server
// records the API's: source "slack", the Slack user (and their Slack
// name) as the actor. nil when there is no audit log. A failure is
// logged; the decision stands.
func slackAudit(rec server.AuditRecorder, log *slog.Logger) func(context.Context, slackinteract.Decision) {
	if rec == nil {
		return nil
	}
	return func(ctx context.Context, d slackinteract.Decision) {
		e := slackAuditEntry(d)
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := rec.RecordAudit(ctx, e); err != nil {
			log.Error("record audit entry", "action", e.Action, "target", e.Target, "actor", e.Actor,
				"result", e.Result, "err", err)
		}
	}
}

// slackAuditEntry is the audit entry of a Slack decision. Its roles are
// none: a Slack approver is one of a notifier's approvers
// (notifiers[].slack.approvers), not a holder of a server.auth role.
func slackAuditEntry(d slackinteract.Decision) store.AuditEntry {
	e := store.AuditEntry{
		At:     d.At,
		Actor:  d.Actor,
		Method: "slack",
		Action: "remediation." + d.Action,
		Target: d.Remediation,
		Result: d.Result,
		Detail: d.Detail,
		Source: store.AuditSourceSlack,
	}
	if d.Notifier != "" {
		if e.Detail != "" {
			e.Detail += "; "
		}
		e.Detail += "notifier " + d.Notifier
	}
	return e
}
