// Package runner defines the seam between the pipeline and the places a
// Terraform run can execute (a local sandboxed process, a Kubernetes Job):
// the Runner interface (and Adopted, a run a previous daemon's Job still
// runs, as a runner that adopts Jobs hands it over), which takes a terraform.Request (everything one
// run needs; secret values referenced by file, never inline) and returns a
// Result or a *terraform.Error.
//
// A runner returns a parsed plan (planparse.Plan) free of values but
// drifted objects' non-sensitive identifying attributes
// (planparse.Change.IDs): sensitive values never cross this boundary, and
// a 50 MB plan JSON is never held in memory or sent over a network. It does not
// classify findings: that is policy's job.
//
// Its subpackages are the implementations: runner/local (a local run),
// runner/kube (a Kubernetes Job), runner/remote (a Job's wire contract and
// its pod's side), and runner/runnertest (a blocking stand-in for tests).
// The run sandbox and Terraform invocation they share are the Terraform
// wing's (internal/terraform/sandbox, tfsession).
//
// It imports drift, terraform and planparse (for their types) and must not
// import its subpackages, tfsession, policy, config, store, notify,
// pipeline, run or app.
package runner
