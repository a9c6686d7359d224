// Package remote is the wire contract between the daemon and a run executing
// somewhere else (a Kubernetes Job's pod), and both ends of it: the run Spec
// the daemon hands the pod, the Result the pod hands back, the per-run
// token, the daemon's HTTP Receiver, and the pod's two sides: RunInPod (the
// runner container, `driftwatch runner`) and Reporter (the reporter
// container, `driftwatch runner report`), joined by the handoff. It imports
// no client-go: the transport of the spec (a Secret) belongs to
// runner/kube; this package is plain JSON, HTTP and a unix socket, so the
// in-pod side links none of Kubernetes' client code paths.
//
// # The pod's two sides and the handoff
//
// The runner runs Terraform, and so whatever code a module brings (`data
// "external"`, provisioners, providers), as its own user. Whatever that
// user can read, a module can read; had it the token, a module could post
// a forged "clean" result before the real one. So the runner has no
// token: only the reporter, another container (mounts) and another user,
// reads it, and the result travels from runner to reporter over a channel
// no process of the run can forge or write into after the fact:
//   - the reporter listens on a unix socket in a directory the two
//     containers share, accepts exactly one connection, and closes the
//     listener (which removes the socket file): later connections are
//     refused;
//   - the runner connects (trying again until the reporter is up, bounded
//     by the spec's deadline) before it starts any process: the first
//     connection, the one accepted, is its own, and nothing of the run
//     exists yet to race it;
//   - the runner's process is made non-dumpable (prctl PR_SET_DUMPABLE 0)
//     before it connects: processes of its user cannot ptrace it, use
//     pidfd_getfd on it, or open its descriptors through /proc/PID/fd;
//     and the connection is close-on-exec, so no child inherits it;
//   - over it go length-prefixed JSON frames (bounded): a remediation's
//     proceed check, which the reporter asks the daemon with the token and
//     answers (failing closed), and last the result, which the reporter
//     validates, acknowledges and posts. A connection that ends without a
//     result fails the reporter, which posts nothing.
//
// What a module can still do is stop the run (kill the runner, its own
// user's process): the reporter then gets no result and fails, the pod
// fails and the daemon records the run errored. It cannot make the daemon
// take a result the runner did not hand over.
//
// What crosses the network is the classified-ready report, not the plan:
// Result carries runner.Result, whose Plan is the value-free
// planparse.Plan (addresses, types, actions, attribute paths; never an
// attribute value). The alternative, shipping compressed plan JSON for the
// daemon to parse, was rejected because:
//   - plan JSON holds every attribute value, sensitive ones included
//     (Terraform marks but does not remove them), so it would put secrets on
//     the wire, in the receiver's memory and in any request log or proxy;
//     the parsed plan cannot leak what it does not hold;
//   - plan JSON reaches 50 MB for large workspaces, the parsed plan a few
//     hundred KB, so the body limit can be tight (DefaultMaxBodyBytes) and
//     the daemon never parses untrusted megabytes;
//   - parsing happens where Terraform ran, streaming, exactly as the local
//     runner does, so both runners return the same runner.Result and policy
//     classification stays in the daemon, identical for both.
//
// The daemon still classifies (policy needs its rules, which the pod does not
// have): "classified report" here means parsed and value-free, not judged.
//
// A remediation run is a Spec with a Remediation (the approved change set
// and its hash, the workspace's rules, envelope and lock timeout; no value):
// the pod runs engine.Applier.Apply instead of a detection and delivers
// the engine.Outcome in Result.Outcome (value-free too), through the
// same Receiver, token and limits. Right before `terraform apply` the pod
// asks the Receiver's proceed check (ProceedRoute, same token, consuming
// nothing) whether it may apply: the kill switch lives in the daemon, and
// a Checker fails closed (engine.CodeDaemonUnreachable) when no clear
// answer comes. Validation keeps the kinds apart: a
// result carries a plan or an outcome, never both, and an outcome comes
// with an error exactly when it is failed.
//
// Tokens: NewToken returns 32 random bytes (base64url) and their SHA-256. The
// token travels only in the pod's run Secret (mounted in the reporter
// container only) and the Authorization header; the daemon keeps the hash
// (in memory, and in the Job's annotation so a restarted daemon can re-arm
// the Receiver, see runner/kube). The Receiver compares hashes in constant
// time, accepts one result per run, refuses after the run's deadline (410)
// and after the run is no longer awaited (410), caps the body before and
// after gzip (413), and answers an unknown run exactly as a wrong token
// (403, one body), so the endpoint does not tell which runs exist; Post
// retries 403 (and an older daemon's 404) until the deadline: during a
// daemon restart or a leader handover the run is not yet re-armed.
//
// The daemon serves the Receiver's two routes with a CallbackServer, on a
// listener of their own (runner.kubernetes.callback_listen) that serves
// nothing else: run pods run workspaces' code, and a NetworkPolicy can
// then let them reach that port and not the daemon's API, status page or
// metrics (and, where a proxy's trusted network covers the pods, not its
// identity headers either).
//
// TLS: the callback may be https. Spec.CallbackCA then carries the PEM of
// the CA that signed the daemon's certificate (runner.kubernetes's
// callback_ca_file, read by the daemon for each run; not a secret), and
// the reporter's client for the result and the proceed check
// (Spec.CallbackClient) trusts exactly the system roots plus that CA, with
// TLS 1.2 or later; without one, the system roots alone. A certificate it
// cannot verify is a transport error: retried until the deadline (a
// certificate being renewed), and the token is never sent to that server.
//
// Defence in depth, should a token leak anyway: a second post of the same
// result (its canonical JSON; a retry whose response was lost) is
// answered 204 again, but a different one is answered 409 and handed to
// the run's awaiter as a conflict (ErrConflictingResults): one of the two
// is forged, and the run keeps neither. The awaiter (runner/kube) holds a
// result until its pod has succeeded, which the reporter's exit code
// decides: a 409 to its post (ConflictError, on the first attempt too) is
// logged as suspicious and the reporter exits non-zero, so a forged result
// that came first is never taken as the verdict.
//
// This package must not import client-go, config, store or notify.
package remote
