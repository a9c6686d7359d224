package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
)

// offReason says why workspace name may not be remediated under the
// current (reloaded) config, or "" when it may: its effective
// remediation.mode is off, or it is no longer configured. byReload words
// it for a reload that just turned it off. The kill switch is apart
// (stopped): it holds approved remediations until resume, where this ends
// them.
func (c *Controller) offReason(name string, byReload bool) string {
	pol, ok := c.policy(name)
	switch {
	case !ok && byReload:
		return fmt.Sprintf("workspace %s removed by config reload", name)
	case !ok:
		return fmt.Sprintf("workspace %s is no longer configured", name)
	case pol.Mode != config.RemediationOff:
		return ""
	case byReload:
		return "remediation turned off by config reload"
	}
	return fmt.Sprintf("remediation for workspace %s is off (config)", name)
}

// offRefusal is the apply-time refusal of a remediation of workspace name
// whose remediation is off (offReason), or nil.
func (c *Controller) offRefusal(name string) *engine.Refusal {
	why := c.offReason(name, false)
	if why == "" {
		return nil
	}
	return &engine.Refusal{Code: engine.CodeRemediationOff, Reason: why + ": nothing applied"}
}

// Reloaded runs after a config reload replaced old (the Host's Config is
// the new one): the pending and approved remediations of every workspace
// whose remediation it turned off (or which it removed) end, with the
// reason (endOff). A remediation already applying is not interrupted:
// stopping `terraform apply` half way is worse than letting it finish. If
// its apply has not started yet, the check right before it
// (Applier.Proceed locally, MayApply for a Job's pod) refuses it; either
// way its outcome is recorded as usual. Other changes (approve to auto, a
// new envelope) end nothing: an apply re-plans under the current rules
// and compares hashes anyway. A standby writes nothing: the leader's loop
// ends what a reload it missed turned off.
func (c *Controller) Reloaded(ctx context.Context, old *config.Config) {
	defer c.reconciled.Store(c.host.Config())
	if !c.host.Leading() {
		return
	}
	for _, w := range old.Workspaces {
		if old.EffectiveRemediation(w).Mode == config.RemediationOff || c.offReason(w.Name, false) == "" {
			continue
		}
		rs, err := c.store.Remediations(ctx, w.Name, 0)
		if err != nil {
			c.log.Error("config reload: list remediations of a workspace turned off", "workspace", w.Name, "err", err)
			continue
		}
		c.endOffAll(ctx, rs, time.Now().UTC(), true)
	}
}

// sweepOff is the loop's endOffAll: a config newer than the one Reloaded
// last handled is a reload whose Reloaded has not run yet.
func (c *Controller) sweepOff(ctx context.Context, rs []store.Remediation, now time.Time) []store.Remediation {
	cur := c.host.Config()
	c.reconciled.CompareAndSwap(nil, cur)
	return c.endOffAll(ctx, rs, now, cur != c.reconciled.Load())
}

// endOffAll ends (endOff) the pending and approved remediations among rs
// whose workspace's remediation is off, checked under c.decide, and
// returns the others.
func (c *Controller) endOffAll(ctx context.Context, rs []store.Remediation, now time.Time, byReload bool) []store.Remediation {
	kept := rs[:0:0]
	for _, r := range rs {
		if r.State == store.RemediationPending || r.State == store.RemediationApproved {
			c.decide.Lock()
			why := c.offReason(r.Workspace, byReload)
			if why != "" {
				c.endOff(ctx, r, now, why)
			}
			c.decide.Unlock()
			if why != "" {
				continue
			}
		}
		kept = append(kept, r)
	}
	return kept
}

// endOff ends remediation r, pending or approved, of a workspace whose
// remediation is off, with reason: a pending one expires (the approval it
// waits for can no longer be given); an approved one is refused before
// its apply, with an outcome (remediation_off, nothing applied) that lets
// a later detection propose the same change set again once remediation
// is back on (refusedTransiently). Both go through
// TransitionRemediationWithAlert like every transition: the refusal is
// announced on the open drift incident, the expiry (as every expiry) is
// not. The caller holds c.decide.
func (c *Controller) endOff(ctx context.Context, r store.Remediation, now time.Time, reason string) {
	to := store.Transition{State: store.RemediationExpired, At: now, By: "config", Reason: reason}
	switch r.State {
	case store.RemediationPending:
	case store.RemediationApproved:
		out, _ := json.Marshal(engine.Outcome{Result: engine.ResultRefused, Reason: reason,
			Refusals: []engine.Refusal{{Code: engine.CodeRemediationOff, Reason: reason}}})
		to = store.Transition{State: store.RemediationRefused, At: now, Reason: reason, Outcome: out}
	default:
		return
	}
	log := c.log.With("workspace", r.Workspace, "remediation", r.ID)
	if _, err := c.transitionAnnounced(context.WithoutCancel(ctx), r, []store.RemediationState{r.State}, to); err != nil {
		if !errors.Is(err, store.ErrConflict) { // else it moved on meanwhile
			log.Error("store: end remediation of a workspace whose remediation is off", "err", err)
		}
		return
	}
	log.Warn("remediation ended: remediation is off for its workspace; nothing applied", "state", to.State, "reason", reason)
	c.metrics.Finished(string(to.State))
}
