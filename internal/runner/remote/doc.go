// Package remote is the wire contract between the daemon and a run executing
// somewhere else (a Kubernetes Job's pod), and both ends of it: the run Spec
// the daemon hands the pod, the Result the pod hands back, the per-run
// token, the daemon's HTTP Receiver and the pod's Post, and RunInPod, which
// is all `driftwatch runner` does. It imports no client-go: the transport of
// the spec (a Secret) belongs to runner/kube; this package is plain JSON and
// HTTP, so the in-pod side links none of Kubernetes' client code paths.
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
// the pod runs remediate.Applier.Apply instead of a detection and delivers
// the remediate.Outcome in Result.Outcome (value-free too), through the
// same Receiver, token and limits. Right before `terraform apply` the pod
// asks the Receiver's proceed check (ProceedRoute, same token, consuming
// nothing) whether it may apply: the kill switch lives in the daemon, and
// a Checker fails closed (remediate.CodeDaemonUnreachable) when no clear
// answer comes. Validation keeps the kinds apart: a
// result carries a plan or an outcome, never both, and an outcome comes
// with an error exactly when it is failed.
//
// Tokens: NewToken returns 32 random bytes (base64url) and their SHA-256. The
// token travels only in the pod's run Secret and the Authorization header;
// the daemon keeps the hash (in memory, and in the Job's annotation so a
// restarted daemon can re-arm the Receiver, see runner/kube). The Receiver
// compares hashes in constant time, accepts one delivery per run (a replay
// gets 409), refuses after the run's deadline (410) and after the run is no
// longer awaited (410), caps the body before and after gzip (413), and
// answers an unknown run 404, which Post retries: during a daemon restart or
// a leader handover the run is not yet re-armed.
//
// This package must not import client-go, config, store or notify.
package remote
