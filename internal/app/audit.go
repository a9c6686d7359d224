package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driftwatch/driftwatch/internal/notify/slackinteract"
	"github.com/driftwatch/driftwatch/internal/server"
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

// limitAudit puts the rate limits of anonymous entries in front of rec
// (server.AuditLimiter), once for the server and Slack's handler both,
// so that they share them; nil when rec is.
func limitAudit(rec server.AuditRecorder, log *slog.Logger, reg prometheus.Registerer) server.AuditRecorder {
	if rec == nil {
		return nil
	}
	return server.NewAuditLimiter(rec, server.AuditLimits{Logger: log, Registerer: reg})
}

// replayStore is where Slack's handler keeps the signatures it has seen
// (slackinteract.Options.Replay): the daemon's store when it can, so
// that a replay is refused after a restart too; else nil (in memory).
func replayStore(st store.Store) store.ReplayStore {
	if r, ok := st.(store.ReplayStore); ok {
		return r
	}
	return nil
}

// slackRefusalAudit records the Slack requests refused before they were
// authenticated (slackinteract.Options.OnRefused) as anonymous entries:
// source slack, actor "anonymous", action "slack.interaction" (what the
// request asked is not believed), with its peer, so that they are
// aggregated and rate limited like the API's. nil when there is no
// audit log.
func slackRefusalAudit(rec server.AuditRecorder, log *slog.Logger) func(context.Context, slackinteract.Refusal) {
	if rec == nil {
		return nil
	}
	return func(ctx context.Context, r slackinteract.Refusal) {
		e := store.AuditEntry{
			At:        r.At,
			Actor:     server.MethodAnonymous,
			Method:    server.MethodAnonymous,
			Action:    "slack.interaction",
			Result:    store.AuditDenied,
			Status:    r.Status,
			Detail:    r.Reason,
			Source:    store.AuditSourceSlack,
			Anonymous: true,
			Peer:      server.AuditPeer(r.RemoteAddr),
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := rec.RecordAudit(ctx, e); err != nil {
			log.Error("record audit entry", "action", e.Action, "actor", e.Actor, "result", e.Result, "err", err)
		}
	}
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
