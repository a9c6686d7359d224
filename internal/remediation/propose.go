package remediation

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

func refusalCodes(raw json.RawMessage) string {
	var rs []engine.Refusal
	_ = json.Unmarshal(raw, &rs)
	codes := make([]string, 0, len(rs))
	for _, r := range rs {
		codes = append(codes, r.Code+"@"+r.Address)
	}
	slices.Sort(codes)
	return strings.Join(codes, ",")
}

func summarizeRefusals(rs []engine.Refusal) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

// AfterDetect evaluates the envelope on a finished detection run of
// workspace (its result and value-free plan) and records a remediation
// for a drifted workspace whose mode is not off.
func (c *Controller) AfterDetect(ctx context.Context, workspace, runID string, res drift.Result, plan *planparse.Plan) {
	pol, ok := c.policy(workspace)
	if !ok || pol.Mode == config.RemediationOff || res.Status == drift.StatusErrored || drift.CountFindings(res.Findings).Drift == 0 {
		return
	}
	log := c.log.With("workspace", workspace, "run_id", runID)
	var findings []drift.Finding
	for _, f := range res.Findings {
		if f.Kind != drift.KindBackend {
			findings = append(findings, f)
		}
	}
	cs, refusals := engine.Evaluate(pol.Envelope, findings, plan)
	csJSON, err := json.Marshal(cs)
	if err != nil {
		log.Error("remediation: encode change set", "err", err)
		return
	}
	if refusals == nil {
		refusals = []engine.Refusal{}
	}
	refJSON, _ := json.Marshal(refusals)
	now := time.Now().UTC()
	r := store.Remediation{
		ID: drift.NewRunID(), Workspace: workspace, DetectRunID: runID, Mode: pol.Mode,
		ChangeSet: csJSON, ChangeSetHash: cs.Hash(), Refusals: refJSON, CreatedAt: now,
	}
	switch {
	case len(refusals) > 0:
		r.State, r.Reason = store.RemediationRefused, summarizeRefusals(refusals)
	case pol.Mode == config.RemediationAuto:
		r.State, r.DecidedAt, r.DecidedBy = store.RemediationApproved, now, "auto"
	default:
		r.State, r.ExpiresAt = store.RemediationPending, now.Add(pol.ApprovalTTL)
	}

	// One remediation per change set: a detection every few minutes must
	// not pile up proposals, re-propose a rejected one, or retry a failed
	// apply (a person looks at it first).
	ctx = context.WithoutCancel(ctx)
	// Under decide, with the mode read again: a reload turning the
	// workspace's remediation off while this run planned ends what is
	// stored here, or is seen here.
	c.decide.Lock()
	defer c.decide.Unlock()
	if c.offReason(workspace, false) != "" {
		return
	}
	prev, err := c.store.Remediations(ctx, workspace, 1)
	if err != nil {
		log.Error("remediation: read previous", "err", err)
		return
	}
	if len(prev) == 1 {
		p := prev[0]
		same := p.ChangeSetHash == r.ChangeSetHash
		switch p.State {
		case store.RemediationPending:
			if same && r.State != store.RemediationRefused {
				return
			}
			// The drift changed (or is now refused): the pending proposal
			// no longer describes it.
			if _, err := c.store.TransitionRemediation(ctx, p.ID, []store.RemediationState{store.RemediationPending},
				store.Transition{State: store.RemediationExpired, At: now, By: "superseded", Reason: "superseded by remediation " + r.ID}); err == nil {
				c.metrics.Finished(string(store.RemediationExpired))
			}
		case store.RemediationApproved, store.RemediationRunning:
			return // its apply re-plans and compares hashes itself
		case store.RemediationRejected, store.RemediationFailed, store.RemediationVerificationFailed:
			if same {
				return
			}
		case store.RemediationRefused:
			if same && refusalCodes(p.Refusals) == refusalCodes(refJSON) && !refusedTransiently(p) {
				return
			}
		}
	}
	if err := c.createAnnounced(ctx, r); err != nil {
		log.Error("remediation: store", "err", err)
		return
	}
	log.Info("remediation proposed", "remediation", r.ID, "state", r.State, "mode", r.Mode, "resources", cs.Len(), "reason", r.Reason)
	if r.State == store.RemediationRefused {
		c.metrics.Finished(string(store.RemediationRefused))
	}
	if r.State == store.RemediationApproved {
		c.wake()
	}
}
