// Package runner defines the seam between the pipeline and the places a
// Terraform run can execute (a local sandboxed process, a Kubernetes Job):
// the Runner interface, Request (everything one run needs; secret values
// referenced by file, never inline), Result, the phase-naming *Error and
// ErrTimeout.
//
// A runner returns a value-free, parsed plan (planparse.Plan): attribute
// values, including sensitive ones, never cross this boundary, and a 50 MB
// plan JSON is never held in memory or sent over a network. It does not
// classify findings: that is policy's job.
//
// Its subpackages are the implementations and what they share:
// runner/local (a local run), runner/kube (a Kubernetes Job),
// runner/remote (a Job's wire contract and its pod's side) and
// terraform/sandbox (the run directory, environment, process handling and
// bubblewrap jail).
//
// It imports drift, planparse and backend (for their types) and must not
// import its subpackages, tfsession, policy, config, store, notify, audit
// or app.
package runner
