package remediation

import (
	"context"
	"errors"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
)

// MayApply answers the proceed check of remediation Jobs' pods
// (remote.ProceedFunc), asked right before `terraform apply`: the kill
// switch is checked before a Job is created, but a pod plans for a while
// before it applies. Run runID may apply only while the kill switch is
// off, its workspace's remediation is not off in the current (reloaded)
// config (remediation_off, recorded as the apply's refusal), and its
// remediation is running, or failed without an outcome: interrupted by a
// restart, its Job adopted by this daemon, which records the outcome on
// it (RecordAdopted). Whatever it cannot confirm refuses.
func (c *Controller) MayApply(ctx context.Context, runID string) *engine.Refusal {
	if c.stopped() {
		return &engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"}
	}
	r, err := c.store.RemediationByApplyRun(ctx, runID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &engine.Refusal{Code: engine.CodeNothingApproved, Reason: "no remediation is applied by run " + runID}
	case err != nil:
		c.log.Error("proceed check: read remediation", "run_id", runID, "err", err)
		return &engine.Refusal{Code: engine.CodeDaemonUnreachable, Reason: "the daemon could not read the remediation of run " + runID}
	}
	if ref := c.offRefusal(r.Workspace); ref != nil {
		return ref
	}
	if r.State == store.RemediationRunning || r.State == store.RemediationFailed && len(r.Outcome) == 0 {
		return nil
	}
	return &engine.Refusal{Code: engine.CodeNothingApproved, Reason: fmt.Sprintf("remediation %s is %s: no longer approved to apply", r.ID, r.State)}
}
