package slackinteract

import (
	"context"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Recorder keeps audit entries: the server's audit recorder (its rate
// limits in front of the store's log), which the daemon hands both the
// server and this handler so that they share the limits.
type Recorder interface {
	RecordAudit(ctx context.Context, e store.AuditEntry) error
}

// anonymous is the actor and method of an entry whose sender is unknown:
// the server's name for a request without a credential.
const anonymous = "anonymous"

// NewAudited is the daemon's Handler (New): its Notifiers are read from
// specs at every request (FromSpecs), so that a reload (approvers, a
// rotated signing secret) applies at once, and its decisions and refusals
// are recorded through rec (DecisionAudit, RefusalAudit with peer; none
// when rec is nil). o's Notifiers, OnDecision and OnRefused are replaced.
func NewAudited(o Options, specs func() []notifycfg.Spec, rec Recorder, peer func(remoteAddr string) string) (*Handler, error) {
	o.Notifiers = func() ([]Notifier, error) { return FromSpecs(specs()) }
	o.OnDecision = DecisionAudit(rec, o.Logger)
	o.OnRefused = RefusalAudit(rec, peer, o.Logger)
	return New(o)
}

// RefusalAudit is an Options.OnRefused that records the requests refused
// before they were authenticated as anonymous entries: source slack,
// actor "anonymous", action "slack.interaction" (what the request asked
// is not believed), with the peer that peer makes of the request's
// RemoteAddr (the server's, so that they are aggregated and rate limited
// like the API's). nil when rec is: there is no audit log.
func RefusalAudit(rec Recorder, peer func(remoteAddr string) string, log *slog.Logger) func(context.Context, Refusal) {
	if rec == nil {
		return nil
	}
	return func(ctx context.Context, r Refusal) {
		e := store.AuditEntry{
			At:        r.At,
			Actor:     anonymous,
			Method:    anonymous,
			Action:    "slack.interaction",
			Result:    store.AuditDenied,
			Status:    r.Status,
			Detail:    r.Reason,
			Source:    store.AuditSourceSlack,
			Anonymous: true,
			Peer:      peer(r.RemoteAddr),
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := rec.RecordAudit(ctx, e); err != nil {
			log.Error("record audit entry", "action", e.Action, "actor", e.Actor, "result", e.Result, "err", err)
		}
	}
}

// DecisionAudit is an Options.OnDecision that records the decisions asked
// through the buttons in the audit log, as the server records the API's:
// source "slack", the Slack user (and their Slack name) as the actor. nil
// when rec is: there is no audit log. A failure is logged; the decision
// stands.
func DecisionAudit(rec Recorder, log *slog.Logger) func(context.Context, Decision) {
	if rec == nil {
		return nil
	}
	return func(ctx context.Context, d Decision) {
		e := d.AuditEntry()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := rec.RecordAudit(ctx, e); err != nil {
			log.Error("record audit entry", "action", e.Action, "target", e.Target, "actor", e.Actor,
				"result", e.Result, "err", err)
		}
	}
}

// AuditEntry is the audit entry of d. Its roles are none: a Slack
// approver is one of a notifier's approvers (notifiers[].slack.approvers),
// not a holder of a server.auth role.
func (d Decision) AuditEntry() store.AuditEntry {
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
