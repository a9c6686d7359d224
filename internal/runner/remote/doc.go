// Package remote is the wire contract between the daemon and a run executing
// somewhere else (a Kubernetes Job's pod), and both ends of it: the run Spec
// the daemon hands the pod, the Result the pod hands back, the per-run
// token, the daemon's HTTP Receiver of results, proceed checks and run
// logs (served by a CallbackServer on a listener of its own), and the
// pod's two sides: RunInPod (the runner container, `driftwatch runner`)
// and Reporter (the reporter container, `driftwatch runner report`),
// joined by the handoff. It imports no
// client-go: the transport of the spec (a Secret) belongs to runner/kube;
// this package is plain JSON, HTTP and a unix socket.
//
// What it guarantees:
//
//   - The runner, which runs a module's code, never holds the token: only
//     the reporter reads it, and the result reaches the reporter over a
//     unix socket that accepts exactly one connection, the runner's, made
//     before any process of the run starts (the runner non-dumpable, the
//     connection close-on-exec).
//   - What crosses the network is value-free: Result carries runner.Result
//     (whose Plan is a planparse.Plan: no value but drifted objects'
//     non-sensitive ids) or, for a remediation (a Spec with a
//     Remediation), an engine.Outcome; never both, and an outcome with an
//     error exactly when it is failed. The daemon still classifies.
//   - A remediation pod asks the daemon's proceed check (ProceedRoute,
//     through the reporter, with the token) right before `terraform
//     apply`; a Checker fails closed (engine.CodeDaemonUnreachable).
//   - Tokens: NewToken returns 32 random bytes and their SHA-256; the
//     daemon keeps the hash. The Receiver compares hashes in constant time,
//     accepts one result per run (the same one again: 204; a different
//     one: 409 and ErrConflictingResults), refuses late and unawaited runs
//     (410), caps the body (413), and answers an unknown run as a wrong
//     token (403); Post retries 403 until the deadline.
//   - Over https, the reporter trusts the system roots plus Spec.CallbackCA
//     only, and never sends the token to a server it cannot verify.
//   - The run's log streams as it is written: the runner's redacted lines
//     go to the reporter in log frames, the reporter posts them in order
//     (LogRoute, with the token, which it redacts from them) and the
//     Receiver writes them into the run's live log (AttachLog). Bounded
//     queues drop lines (a marker counts them) rather than hold the run
//     up, and the result waits for the log at most 30 s per hop.
//
// Design notes (the handoff, the log's hops, why a parsed plan and not
// plan JSON, the defence in depth should a token leak):
// docs/architecture/terraform.md.
//
// In the pod it runs what it is handed (RunInPod's runner.Runner, the
// local runner, and ApplyFunc, Apply's engine.Applier); it must not import
// client-go, config, store, notify, pipeline, run, the runner
// implementations or the remediation controller.
package remote
