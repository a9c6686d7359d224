// Package tfsession owns Terraform invocation: it is the one place that
// starts a Terraform (or OpenTofu) process, and the only importer of
// terraform-exec in the module. Detection (internal/runner/local) and
// remediation (internal/remediation/engine's Applier) are its only
// importers (a depguard rule says so): each sets its run up with Prepare
// and calls the Session's steps; neither starts Terraform itself.
//
// Prepare sets a run up the same way for both: a fresh run directory
// (sandbox.NewDir), the scrubbed environment (sandbox.BuildEnv), the code
// copied or checked out into it (sandbox.PrepareSource), every value to
// redact (the daemon's known secrets, backend_config values, secret env
// values, values of variables declared sensitive), then the session
// (Open: the binary, the jail, the stderr tail, the variables file, never
// -var). Its errors (phase setup or source) are redacted of every value
// known when they happened, and it leaves nothing behind on error;
// Prepared.Close ends a run.
//
// A Session's steps are Init (with the shared plugin cache rules, Shared),
// Version, WorkspaceSelect, Plan (detection's plan -json rendered into the
// run log without values; remediation's under the state lock), Unchanged
// (a no-change plan summarised from the plan file, planfile, instead of
// show -json), Show (show -json streamed into planparse), ShowText and
// Apply (a saved plan file). Each fails with a *terraform.Error naming its
// phase with a one-line reason from Terraform's diagnostics, redacted of
// every secret the session knows. Phases times the run's phases.
//
// It owns besides the run log of Terraform's output (complete, redacted
// lines under "== phase ==" headers; show -json never reaches it) and the
// value-free rendering of `plan -json`. Each step in detail:
// docs/architecture/terraform.md.
//
// It does not interpret plans beyond planparse (classification is
// policy's, the revert check and the envelope the remediation engine's),
// and must not import config, store, notify, server, app, pipeline,
// policy, remediation/engine or the runners: it sits below both of its
// callers.
package tfsession
