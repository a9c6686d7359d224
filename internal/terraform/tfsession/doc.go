// Package tfsession owns Terraform invocation: it is the one place that
// starts a Terraform (or OpenTofu) process, and the only importer of
// terraform-exec in the module. Detection (internal/runner/local) and
// remediation (internal/remediation/engine's Applier) open a Session for one run and
// call its steps; neither starts Terraform itself.
//
// A Session is built for one run from what the caller prepared in the
// run's sandbox (internal/terraform/sandbox): the run directory, the copied
// module, the scrubbed environment (sandbox.BuildEnv), the values to redact,
// the kill grace (sandbox.Begin). Open resolves the binary, prepares the
// run's jail (sandbox.NewJail), the stderr tail that failures are
// explained from, and the variables file (variables go through a file,
// never -var: argv is visible to every user of the machine, and
// terraform-exec logs it). The steps are:
//
//   - Init: `init` (the caller skips it when it restored a kept working
//     directory, sandbox.Kept), with the shared plugin cache rules (Shared holds the
//     in-process lock, a file lock covers other processes; only a cold
//     init, under the lock, may write the cache, and the jail lets it);
//     remediation's init uses no cache;
//   - Version: "terraform 1.11.4", asked once per binary path and
//     modification time when the caller keeps a Shared;
//   - WorkspaceSelect: the request's Terraform workspace, if not default;
//   - Plan: detection's `plan -json` (lock off; run by the session's own
//     command, since terraform-exec's PlanJSON spends a `version` process
//     per handle), whose machine-readable stream is rendered into the run
//     log without values and counted; remediation's plan (terraform-exec)
//     under the state lock, with its timeout;
//   - Unchanged: after a JSON plan whose stream reported no change of any
//     kind and no warning from within a check block, the value-free
//     summary read from the plan file itself (internal/terraform/planfile: prior
//     state and configuration snapshot), so that show -json, which starts
//     every provider again, is skipped; a failing check needs show -json,
//     which alone has its kind, module path and messages;
//   - Show: `show -json` streamed into planparse (and into any other reader
//     the caller adds, such as remediation's revert check), never buffered
//     whole and never logged; the plan's check messages redacted as the log
//     is; a check that could not be evaluated (status error, or its nested
//     data source failed, as the plan stream told) fails the run as a
//     plan failure, since whether it holds is unknown; ShowText, the
//     human-readable plan, only where a workspace opts in (log_plan_text);
//   - Apply: exactly a saved plan file, lock on.
//
// Each step fails with a *terraform.Error naming its phase (init, workspace,
// plan, show, apply) with a one-line reason taken from Terraform's
// diagnostics and redacted of every secret the session knows (a failed
// condition, a precondition, postcondition or variable validation that
// fails the plan, keeps its object's address and its author's message,
// redacted, capped at drift.MaxCheckDetail); a failed
// call of the s3 state backend (no answer, or a 5xx after the SDK's
// retries) is told as such (sandbox.BackendFailure), without the SDK's
// request URL. Phases
// times the run's phases; callers mark them where their phases end.
//
// What it owns besides: the run log of Terraform's output (complete,
// redacted lines under "== phase ==" headers; show -json never reaches
// it) and the value-free rendering of `plan -json`.
//
// What it must not touch: it does not prepare the sandbox (directory,
// environment, source, run marker, timeout and sweep are
// internal/terraform/sandbox's and the caller's), does not interpret plans
// beyond planparse (classification is policy's, the revert check and the
// envelope are the remediation engine's), and must not import config, store, notify,
// server, app, pipeline, policy, remediation/engine, runner/local, runner/remote or
// runner/kube: it sits below both of its callers.
package tfsession
