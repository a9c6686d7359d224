// Package pipeline is the per-workspace pipeline, spelled out once: run the
// workspace (runner), classify its value-free plan (policy) and produce a
// drift.Result. The one-shot `audit` command and the daemon both call it,
// so they cannot diverge.
//
// It owns Target (a workspace ready to run: its terraform.Request and
// policy.Rules), Targets (the one place a terraform.Request is built from
// the config: Filter selects the workspaces, Env adds the caller's owner,
// jail and work directory; the daemon's inventory and the one-shot audit,
// pipeline/oneshot, call it), Auditor.Check and CheckPlan (one target end to end; a failed run
// is a result with status errored and a one-line reason, never an error;
// CheckPlan also returns the plan for the remediation envelope; after
// classifying, it dates drift from Target.Prior (the windows), asks the
// workspace's attribution command about drift first seen and finds the
// commit behind pending changes of a git source: bounded, never failing
// the run; docs/architecture/attribution.md; a scan, Target.Scan, compares
// its list with a Fleet instead: drift/unmanaged, scan.go) and RunAll
// (every target, at most concurrency at once, results in target order, an
// Observer told of each start and finish; scans after the workspaces,
// compared with their results when the Auditor has no Fleet); Target.SourceDir locates a
// target's findings in a report.
//
// It reads the config (Targets) and depends on the runner seam only; of
// the sandbox it uses the redactor (a failed run's reason) and the git
// cache's place, of source the checkout, Locator and LastChange. It must
// not import a runner implementation (runner/local, runner/kube,
// runner/remote), tfsession, store, notify, incident or app: recording
// results, incidents and notifications are the caller's (internal/run).
// Its users are app, pipeline/oneshot, inventory and run.
package pipeline
