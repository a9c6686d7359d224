package app

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/remediation"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/server"
)

// newRemediator is the daemon's remediation controller (internal/remediation),
// wired to the daemon through remediationHost. The daemon starts its loop
// (Run) while it leads; the run lifecycle hands it every finished detection
// (AfterDetect) and the scheduler's remediate runs (Apply); reload hands it
// every reload (Reloaded), and the remediation pods' proceed checks reach
// it through mayApply. A decision through the API is recorded as the
// caller the server authenticated (server.CallerActor).
func newRemediator(ctx context.Context, d *daemon, m *metrics.Remediations) (*remediation.Controller, error) {
	return remediation.New(ctx, remediation.Options{
		Host:            remediationHost{d},
		Store:           d.store,
		Applier:         d.remediationApplier(),
		Metrics:         m,
		Logger:          d.log,
		Runner:          d.inv.Config().Runner.EffectiveMode(),
		HashMismatchErr: server.ErrHashMismatch,
		Caller:          server.CallerActor,
	})
}

// remediationApplier is where approved remediations apply: in a Job with
// the kubernetes runner, else in the daemon's process.
func (d *daemon) remediationApplier() remediation.Applier {
	if d.kube != nil {
		return d.kube.Runner
	}
	return remediation.InProcess{}
}

// mayApply answers the proceed check of remediation Jobs' pods
// (remote.ProceedFunc), asked right before `terraform apply`
// (remediation.Controller.MayApply).
func (d *daemon) mayApply(ctx context.Context, runID string) *engine.Refusal {
	return d.rem.MayApply(ctx, runID)
}

// remediationHost is the daemon as the controller's remediation.Host:
// read at every call, so a reload's config, targets and alert plans are
// seen at once.
type remediationHost struct{ d *daemon }

func (h remediationHost) Config() *config.Config { return h.d.inv.Config() }

func (h remediationHost) Target(workspace string) (remediation.Target, bool) {
	t, ok := h.d.inv.Target(workspace)
	return remediation.Target{Request: t.Request, Rules: t.Rules}, ok
}

func (h remediationHost) Leading() bool { return h.d.leader.Leading() }

// QueueApply goes through the run queue: the apply gets the workspace's
// slot, so no other run of the workspace is in flight while it applies.
func (h remediationHost) QueueApply(workspace string) error { return h.d.runs.QueueApply(workspace) }

func (h remediationHost) Detect(ctx context.Context, workspace, trigger string) {
	h.d.runs.Detect(ctx, workspace, trigger)
}

func (h remediationHost) AlertPlan(workspace string) (remediation.AlertPlan, bool) {
	return h.d.inv.Plan(workspace)
}

func (h remediationHost) WakeOutbox() { h.d.outbox.Wake() }
