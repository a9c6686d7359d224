// Package pipeline is the per-workspace pipeline, spelled out once: run the
// workspace (runner), classify its value-free plan (policy) and produce a
// drift.Result. The one-shot `audit` command and the daemon both call it,
// so they cannot diverge.
//
// It owns Target (a workspace ready to run: its terraform.Request and
// policy.Rules), Auditor.Check and CheckPlan (one target end to end; a
// failed run is a result with status errored and a one-line reason, never
// an error; CheckPlan also returns the plan for the remediation envelope)
// and RunAll (every target, at most concurrency at once, results in target
// order, an Observer told of each start and finish).
//
// It depends on the runner seam only. It must not import a runner
// implementation (runner/local, runner/kube, runner/remote,
// terraform/sandbox), tfsession, config, store, notify, incident or app:
// recording results, incidents and notifications are the caller's
// (internal/app), and building targets from the config is too.
package pipeline
