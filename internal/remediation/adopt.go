package remediation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/store"
)

// AwaitAdopted awaits a remediation Job that a previous daemon left
// running and records its outcome on the remediation it applies (which
// New marked failed at start: "driftwatch stopped during the apply"). It
// returns an error only when the wait was cut short by this daemon
// stopping; the Job then stays for the next one.
func (c *Controller) AwaitAdopted(ctx context.Context, a *kube.Adopted) error {
	log := c.log.With("workspace", a.Workspace, "run_id", a.RunID, "job", a.Job)
	log.Info("awaiting the remediation job a previous daemon left running")
	// Only this daemon stopping (kube.ErrStopped) ends the wait: a cancel
	// request must not delete a Job half way through its apply. It
	// cancels the verification detection that follows instead.
	wctx := context.WithoutCancel(ctx)
	out, err := a.WaitOutcome(wctx)
	if errors.Is(err, kube.ErrStopped) {
		return err
	}
	fin := time.Now().UTC()
	// The apply's run was left running at the restart (the daemon keeps
	// adopted Jobs' runs): it finishes under its id, with the outcome.
	if run, err := c.store.Run(wctx, a.RunID); err == nil && run.Status == store.RunRunning && run.Workspace == a.Workspace {
		c.finishApplyRun(wctx, log, run, out, fin)
	}
	r, lerr := c.store.RemediationByApplyRun(wctx, a.RunID)
	if lerr != nil {
		log.Warn("adopted remediation job finished; no remediation to record it on",
			"result", out.Result, "reason", out.Reason, "err", lerr)
		return nil
	}
	if !c.recordOutcome(wctx, log, r, store.RemediationFailed, out, fin) {
		log.Info("adopted remediation job finished", "remediation", r.ID, "result", out.Result, "reason", out.Reason)
	}
	return nil
}

// MayApply answers the proceed check of remediation Jobs' pods
// (remote.ProceedFunc), asked right before `terraform apply`: the kill
// switch is checked before a Job is created, but a pod plans for a while
// before it applies. Run runID may apply only while the kill switch is
// off, its workspace's remediation is not off in the current (reloaded)
// config (remediation_off, recorded as the apply's refusal), and its
// remediation is running, or failed without an outcome: interrupted by a
// restart, its Job adopted by this daemon, which records the outcome on
// it (AwaitAdopted). Whatever it cannot confirm refuses.
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
