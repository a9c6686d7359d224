// Package local runs a workspace as a sandboxed local subprocess: a fresh
// 0700 work directory, a copy of the code (Terraform never writes into the
// user's directory), a scrubbed environment, its own process group (and,
// where the request names bubblewrap, the jail), a timeout that sends
// SIGINT and then kills, and a sweep that leaves no Terraform or provider
// process behind. It sets the run up with tfsession.Prepare (running the
// static backend check once the source is in place) and drives Terraform
// through the tfsession.Session: init with the shared plugin cache,
// workspace, plan -json, show -json.
//
// Its fast paths (off with terraform.Request.NoFastPaths): show -json only
// when the plan reported a change (tfsession.Session.Unchanged otherwise),
// and, with Runner.KeepWorkDirs, the workspace's kept working state
// (sandbox.Kept) moved into the fresh copy instead of an init when its key
// matches; a reused state that fails for want of an init is retried once
// from a fresh init.
//
// It owns the order of a detection run's steps and turning them into a
// runner.Result (a timeout or cancellation reported as such, whatever
// Terraform printed). The sandbox itself is terraform/sandbox's and
// Terraform invocation tfsession's: it does not start Terraform itself
// and does not import terraform-exec. It must not import config, store,
// notify, policy, pipeline, run, server, app or the other runners
// (runner/kube, runner/remote); app constructs it (and, in a Job's pod,
// hands it to runner/remote).
package local
