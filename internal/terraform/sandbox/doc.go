// Package sandbox holds what every place that runs Terraform on a
// workspace shares (the local runner's detection runs and remediation's
// applies): the 0700 run directory, the scrubbed environment, the copied or
// checked-out source, Terraform as a well-behaved subprocess (own process
// group, SIGINT then kill), the marker that lets a sweep kill every process
// of a run, bounded and redacted output, and one-line diagnostics.
//
// It is also the bubblewrap jail: DetectIsolation resolves the
// terraform.sandbox setting on this machine, and NewJail confines every
// Terraform process of a run in its own user, mount, PID, IPC and UTS
// namespaces, seeing only its run directory and what Terraform needs. The
// daemon's binary started as JailExecName is the jail's launcher (the
// package's init dispatches on that name). Besides: reading the values of
// sensitive variables statically for redaction (SensitiveValues), killing
// and removing what a killed daemon's runs left (KillOwned,
// SweepOwnedDirs), file locks, and SetNonDumpable.
//
// It prepares and confines (tfsession.Prepare puts its pieces together
// for a run); it does not decide which Terraform steps run or read their
// plans (tfsession, the runners, remediation/engine). It must
// not import terraform-exec, tfsession, the runner implementations
// (runner/local, runner/kube, runner/remote), config, store, notify,
// server or app.
package sandbox
