package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/store"
)

// maxRemediationReason bounds the reason a remediation message carries.
const maxRemediationReason = 300

// createAnnounced stores a new remediation and, in the same transaction,
// its announcement on the workspace's open drift incident.
func (rm *remediator) createAnnounced(ctx context.Context, r store.Remediation) error {
	if err := rm.d.store.CreateRemediationWithAlert(ctx, r, rm.announce(r.CreatedAt)); err != nil {
		return err
	}
	rm.d.outbox.Wake()
	return nil
}

// transitionAnnounced is TransitionRemediation with, in the same
// transaction, the announcement of the state reached.
func (rm *remediator) transitionAnnounced(ctx context.Context, id string, from []store.RemediationState, to store.Transition) (store.Remediation, error) {
	out, err := rm.d.store.TransitionRemediationWithAlert(ctx, id, from, to, rm.announce(to.At))
	if err == nil {
		rm.d.outbox.Wake()
	}
	return out, err
}

// announce returns the store.RemediationAlert that tells the workspace's
// open drift incident (its notifier targets, after its earlier messages)
// about a remediation: proposed and awaiting approval, approved (auto),
// refused, or the outcome of its apply. A failed apply raises the
// incident's severity (incident.Remediation). Without an open drift
// incident nothing is sent.
func (rm *remediator) announce(at time.Time) store.RemediationAlert {
	plans := *rm.d.alerts.Load()
	externalURL := rm.d.cfg.Load().Server.ExternalURL
	return func(r store.Remediation, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		rem, ok := remediationNote(r, externalURL)
		plan, planned := plans[r.Workspace]
		if !ok || !planned {
			return nil, nil
		}
		runID := r.ApplyRunID
		if runID == "" {
			runID = r.DetectRunID
		}
		changed, msg := incident.Remediation(at, plan.policy, r.Workspace, runID, rem, incidents, newRunID)
		if msg == nil {
			rm.log.Debug("remediation not announced: the workspace has no open drift incident",
				"workspace", r.Workspace, "remediation", r.ID, "result", string(rem.Result))
			return nil, nil
		}
		out, err := incident.Enqueue(at, []notify.Message{*msg}, plan.targets)
		if err != nil {
			// Enqueue only fails on a payload that cannot be encoded: a bug.
			panic(fmt.Sprintf("driftwatch/app: enqueue remediation message: %v", err))
		}
		var ch []store.Incident
		if changed != nil {
			ch = []store.Incident{*changed}
			rm.log.Warn("failed remediation: incident severity raised", "workspace", r.Workspace, "remediation", r.ID,
				"incident", changed.Key, "severity", changed.Severity)
		}
		return ch, out
	}
}

// remediationNote is the value-free message payload of remediation r, and
// whether its state is announced at all: running, rejected (a person did
// it) and expired are not.
func remediationNote(r store.Remediation, externalURL string) (notify.Remediation, bool) {
	var res notify.RemediationResult
	switch r.State {
	case store.RemediationPending:
		res = notify.RemediationAwaitingApproval
	case store.RemediationApproved:
		res = notify.RemediationApproved
	case store.RemediationApplied:
		res = notify.RemediationApplied
	case store.RemediationFailed:
		res = notify.RemediationFailed
	case store.RemediationVerificationFailed:
		res = notify.RemediationVerificationFailed
	case store.RemediationRefused:
		res = notify.RemediationRefused
	default:
		return notify.Remediation{}, false
	}
	var cs remediate.ChangeSet
	_ = json.Unmarshal(r.ChangeSet, &cs) // unreadable: 0 resources; the reason says why it failed
	n := notify.Remediation{
		ID: r.ID, Mode: r.Mode, Result: res, Reason: notify.Truncate(notify.OneLine(r.Reason), maxRemediationReason),
		Resources: cs.Len(), ApplyRunID: r.ApplyRunID,
	}
	if res == notify.RemediationAwaitingApproval {
		n.ExpiresAt = r.ExpiresAt
	}
	if externalURL != "" && r.ApplyRunID != "" {
		n.URL = externalURL + "/runs/" + r.ApplyRunID
	}
	return n, true
}
