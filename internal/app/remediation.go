package app

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/remediation"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
)

// mayApply answers the proceed check of remediation Jobs' pods
// (remote.ProceedFunc), asked right before `terraform apply`
// (remediation.Controller.MayApply). The kubernetes mode is built before
// the controller, hence the method.
func (d *daemon) mayApply(ctx context.Context, runID string) *engine.Refusal {
	return d.rem.MayApply(ctx, runID)
}

// remediationHost is the daemon as the remediation controller's
// remediation.Host: read at every call, so a reload's config, targets and
// alert plans are seen at once. The daemon starts the controller's loop
// (Run) while it leads; the run lifecycle hands it every finished
// detection (AfterDetect) and the scheduler's remediate runs (Apply); the
// inventory hands it every reload (Reloaded); a decision through the API
// is recorded as the caller the server authenticated (server.CallerActor).
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
