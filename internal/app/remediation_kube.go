package app

import (
	"context"
	"encoding/json"
	"errors"
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
	out, err := a.WaitOutcome(ctx)
	if errors.Is(err, kube.ErrStopped) {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	wctx := context.WithoutCancel(ctx)
	rs, lerr := rm.d.store.Remediations(wctx, a.Workspace, 50)
	var r store.Remediation
	for _, x := range rs {
		if x.ApplyRunID == a.RunID {
			r = x
		}
	}
	if lerr != nil || r.ID == "" {
		log.Warn("adopted remediation job finished; no remediation to record it on",
			"result", out.Result, "reason", out.Reason, "err", lerr)
		return nil
	}
	outJSON, _ := json.Marshal(out)
	if _, err := rm.transitionAnnounced(wctx, r.ID, []store.RemediationState{store.RemediationFailed},
		store.Transition{State: store.RemediationState(out.Result), At: time.Now().UTC(), Reason: out.Reason, Outcome: outJSON}); err != nil {
		log.Error("store: record adopted remediation outcome", "remediation", r.ID, "err", err)
		return nil
	}
	log.Info("adopted remediation job finished", "remediation", r.ID, "result", out.Result, "reason", out.Reason)
	return nil
}
