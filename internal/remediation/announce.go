package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
)

// maxRemediationReason bounds the reason a remediation message carries.
const maxRemediationReason = 300

// createAnnounced stores a new remediation and, in the same transaction,
// its announcement on the workspace's open drift incident.
func (c *Controller) createAnnounced(ctx context.Context, r store.Remediation) error {
	if err := c.store.CreateRemediationWithAlert(ctx, r, c.announce(r.Workspace, r.CreatedAt)); err != nil {
		return err
	}
	c.host.WakeOutbox()
	return nil
}

// transitionAnnounced is TransitionRemediation of remediation r with, in
// the same transaction, the announcement of the state reached.
func (c *Controller) transitionAnnounced(ctx context.Context, r store.Remediation, from []store.RemediationState, to store.Transition) (store.Remediation, error) {
	out, err := c.store.TransitionRemediationWithAlert(ctx, r.ID, from, to, c.announce(r.Workspace, to.At))
	if err == nil {
		c.host.WakeOutbox()
	}
	return out, err
}

// announce returns the store.RemediationAlert that tells the open drift
// incident of workspace (its notifier targets, after its earlier
// messages) about a remediation of it: proposed and awaiting approval,
// approved (auto), refused, or the outcome of its apply. A failed apply
// raises the incident's severity (incident.Remediation). Without an open
// drift incident nothing is sent.
func (c *Controller) announce(workspace string, at time.Time) store.RemediationAlert {
	plan, planned := c.host.AlertPlan(workspace)
	externalURL := c.host.Config().Server.ExternalURL
	return func(r store.Remediation, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		rem, ok := remediationNote(r, externalURL)
		if !ok || !planned {
			return nil, nil
		}
		runID := r.ApplyRunID
		if runID == "" {
			runID = r.DetectRunID
		}
		changed, msg := incident.Remediation(at, plan.Policy, r.Workspace, runID, rem, incidents, drift.NewRunID)
		if msg == nil {
			c.log.Debug("remediation not announced: the workspace has no open drift incident",
				"workspace", r.Workspace, "remediation", r.ID, "result", string(rem.Result))
			return nil, nil
		}
		out, err := plan.Enqueue(at, []notify.Message{*msg})
		if err != nil {
			// Enqueue only fails on a payload that cannot be encoded: a bug.
			panic(fmt.Sprintf("driftwatch/remediation: enqueue remediation message: %v", err))
		}
		var ch []store.Incident
		if changed != nil {
			ch = []store.Incident{*changed}
			c.log.Warn("failed remediation: incident severity raised", "workspace", r.Workspace, "remediation", r.ID,
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
	var cs engine.ChangeSet
	_ = json.Unmarshal(r.ChangeSet, &cs) // unreadable: 0 resources; the reason says why it failed
	n := notify.Remediation{
		ID: r.ID, Mode: r.Mode, Result: res, Reason: notify.Truncate(notify.OneLine(r.Reason), maxRemediationReason),
		Resources: cs.Len(), ApplyRunID: r.ApplyRunID,
	}
	if res == notify.RemediationAwaitingApproval {
		n.ExpiresAt = r.ExpiresAt
		n.ChangeSetHash = r.ChangeSetHash
	}
	if externalURL != "" && r.ApplyRunID != "" {
		n.URL = externalURL + "/runs/" + r.ApplyRunID
	}
	return n, true
}
