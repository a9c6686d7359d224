package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/store"
)

// remediationApplier performs an approved remediation where the
// workspace's runs execute: in the daemon's process (runner.mode local) or
// in a Kubernetes Job (*kube.Runner), with a's rules, envelope and lock
// timeout either way.
type remediationApplier interface {
	Remediate(ctx context.Context, a *remediate.Applier, req runner.Request, approved remediate.ChangeSet) (remediate.Outcome, error)
}

var _ remediationApplier = (*kube.Runner)(nil)

// inProcess applies in the daemon's process, with a.Apply.
type inProcess struct{}

func (inProcess) Remediate(ctx context.Context, a *remediate.Applier, req runner.Request, approved remediate.ChangeSet) (remediate.Outcome, error) {
	return a.Apply(ctx, req, approved)
}

func (d *daemon) remediationApplier() remediationApplier {
	if d.kube != nil {
		return d.kube.runner
	}
	return inProcess{}
}

// awaitAdopted awaits a remediation Job that a previous daemon left
// running and records its outcome on the remediation it applies (which
// newRemediator marked failed at start: "driftwatch stopped during the
// apply"). It returns an error only when the wait was cut short by this
// daemon stopping; the Job then stays for the next one.
func (rm *remediator) awaitAdopted(ctx context.Context, a *kube.Adopted) error {
	log := rm.log.With("workspace", a.Workspace, "run_id", a.RunID, "job", a.Job)
	log.Info("awaiting the remediation job a previous daemon left running")
	// Only this daemon stopping (kube.ErrStopped) ends the wait: a cancel
	// request must not delete a Job half way through its apply. It
	// cancels the verification detection that follows instead.
	wctx := context.WithoutCancel(ctx)
	out, err := a.WaitOutcome(wctx)
	if errors.Is(err, kube.ErrStopped) {
		return err
	}
	r, lerr := rm.d.store.RemediationByApplyRun(wctx, a.RunID)
	if lerr != nil {
		log.Warn("adopted remediation job finished; no remediation to record it on",
			"result", out.Result, "reason", out.Reason, "err", lerr)
		return nil
	}
	if !rm.recordOutcome(wctx, log, r, store.RemediationFailed, out, time.Now().UTC()) {
		log.Info("adopted remediation job finished", "remediation", r.ID, "result", out.Result, "reason", out.Reason)
	}
	return nil
}

// mayApply answers the proceed check of remediation Jobs' pods
// (remote.ProceedFunc), asked right before `terraform apply`: the kill
// switch is checked before a Job is created, but a pod plans for a while
// before it applies.
func (d *daemon) mayApply(ctx context.Context, runID string) *remediate.Refusal {
	return d.rem.mayApply(ctx, runID)
}

// mayApply lets run runID apply only while the kill switch is off, its
// workspace's remediation is not off in the current (reloaded) config
// (remediation_off, recorded as the apply's refusal), and its remediation
// is running, or failed without an outcome: interrupted by a restart, its
// Job adopted by this daemon, which records the outcome on it
// (awaitAdopted). Whatever it cannot confirm refuses.
func (rm *remediator) mayApply(ctx context.Context, runID string) *remediate.Refusal {
	if rm.stopped() {
		return &remediate.Refusal{Code: remediate.CodePaused, Reason: "remediation is paused (global kill switch)"}
	}
	r, err := rm.d.store.RemediationByApplyRun(ctx, runID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &remediate.Refusal{Code: remediate.CodeNothingApproved, Reason: "no remediation is applied by run " + runID}
	case err != nil:
		rm.log.Error("proceed check: read remediation", "run_id", runID, "err", err)
		return &remediate.Refusal{Code: remediate.CodeDaemonUnreachable, Reason: "the daemon could not read the remediation of run " + runID}
	}
	if ref := rm.offRefusal(r.Workspace); ref != nil {
		return ref
	}
	if r.State == store.RemediationRunning || r.State == store.RemediationFailed && len(r.Outcome) == 0 {
		return nil
	}
	return &remediate.Refusal{Code: remediate.CodeNothingApproved, Reason: fmt.Sprintf("remediation %s is %s: no longer approved to apply", r.ID, r.State)}
}

// heldByKillSwitch reports whether an apply was refused by the kill
// switch (in the daemon, or asked by a Job's pod right before the apply):
// nothing was applied.
func heldByKillSwitch(out remediate.Outcome) bool {
	return out.Result == remediate.ResultRefused &&
		slices.ContainsFunc(out.Refusals, func(x remediate.Refusal) bool { return x.Code == remediate.CodePaused })
}

// refusedTransiently reports whether remediation r's apply was refused
// only for a passing reason (another operation held the state lock, the
// Job's pod could not reach a restarting daemon, or the workspace's
// remediation was turned off: endOff, mayApply): nothing was applied,
// and the next detection of the same drift may propose it again. Not
// re-queued at once: a lasting cause (a NetworkPolicy, a stuck lock) then
// costs one attempt per detection, not a loop of Jobs.
func refusedTransiently(r store.Remediation) bool {
	var out remediate.Outcome
	if r.State != store.RemediationRefused || len(r.Outcome) == 0 || json.Unmarshal(r.Outcome, &out) != nil || len(out.Refusals) == 0 {
		return false
	}
	return !slices.ContainsFunc(out.Refusals, func(x remediate.Refusal) bool {
		return x.Code != remediate.CodeStateLocked && x.Code != remediate.CodeDaemonUnreachable && x.Code != remediate.CodeRemediationOff
	})
}

// reapprove returns remediation r, held by the kill switch before its
// apply, from state from to approved (who approved it and when kept): it
// is queued again on resume. Its apply run stays recorded as refused.
func (rm *remediator) reapprove(ctx context.Context, log *slog.Logger, r store.Remediation, from store.RemediationState, reason string) {
	at := r.DecidedAt
	if at.IsZero() {
		at = time.Now().UTC()
	}
	if _, err := rm.d.store.TransitionRemediation(ctx, r.ID, []store.RemediationState{from},
		store.Transition{State: store.RemediationApproved, At: at, By: r.DecidedBy, Reason: reason}); err != nil {
		log.Error("store: re-approve remediation held by the kill switch", "remediation", r.ID, "err", err)
		return
	}
	log.Warn("remediation held by the kill switch before its apply: nothing applied; approved again, applies on resume", "remediation", r.ID)
}
