// Package kube runs each workspace run as a sandboxed Kubernetes Job and
// returns its result through the runner.Runner seam. It is, with app, the
// only importer of client-go; the wire contract and the pod's side live in
// runner/remote, which has no Kubernetes dependency.
//
// # Building (pure)
//
// prepare maps a terraform.Request onto the pod (which Secret keys are mounted
// where, the run spec, the deadline), buildJob and buildSecret turn that
// into objects; all three are pure and golden-tested (testdata/).
//
//   - One batch/v1 Job per run in Config.Namespace, named
//     driftwatch-<workspace>-<10 hex of sha256(run id)> (at most 63
//     characters: the job-name label the Job controller adds caps it), with
//     labels app.kubernetes.io/managed-by=driftwatch, driftwatch.io/workspace,
//     driftwatch.io/run-id (values made label-safe; the exact names are
//     in annotations of the same keys) and driftwatch.io/kind (detect or
//     remediate; a Job without it is a detection).
//   - The pod has two containers of Config.Image, sharing an emptyDir at
//     /run/driftwatch-handoff (in memory, 1 MiB):
//     "runner" runs Config.Command + `runner --spec SPEC --socket SOCK`:
//     it runs Terraform (and so any module's code: `data "external"`,
//     provisioners, providers) and has no token;
//     "reporter" runs Config.Command + `runner report --spec SPEC --socket
//     SOCK` and is the only container that mounts the run's result token.
//     The reporter listens on SOCK (/run/driftwatch-handoff/reporter.sock),
//     accepts exactly one connection and closes its listener; the runner
//     connects before it starts any process, so that connection is its,
//     and hands its result (and a remediation's proceed check) over it; the
//     reporter validates the result and posts it with the token (see
//     runner/remote for the handoff and why nothing of the run can forge
//     or inject into it). The spec and the token come from a per-run
//     Secret of the Job's name, as two volumes: "run" projects only
//     spec.json (0440) at /etc/driftwatch/run, mounted in both; "token"
//     projects only the token (item mode 0400) at /etc/driftwatch/token,
//     mounted in the reporter only.
//     The Job is created first and the Secret second, owned by the Job
//     (ownerReference with its UID), so the garbage collector deletes it
//     with the Job and no failure between the two calls can orphan a token:
//     if the Secret cannot be created the Job is deleted. The kubelet
//     retries a missing Secret volume, so the pod simply waits for it.
//   - Why the mounts, not the file mode, keep the token from Terraform: a
//     Secret volume's files belong to root, so a non-root reporter can only
//     read the token through a group, and the only group the kubelet gives
//     Secret files is the pod's fsGroup, which it also adds (with group
//     read, whatever the item's mode: 0400 becomes 0440) to every
//     container's supplementary groups. Dropping fsGroup would leave the
//     token unreadable by any non-root container; a per-container group
//     does not exist. So fsGroup stays (65532, for the spec, the
//     credentials and the emptyDirs), the token file is group-readable by
//     a group the runner also has, and the boundary is that no volume
//     holding the token is mounted in the runner container, whose
//     processes cannot reach another container's mounts: separate mount
//     namespaces, and shareProcessNamespace false (spelled out), so no
//     /proc/PID/root of the reporter is in reach. The reporter also runs as
//     another user (65533) than Terraform (65532): no process of the run
//     can signal or ptrace it, even if the PID namespace were shared.
//   - Credentials are files, never env: each secret env name of the
//     workspace maps (Config.Workspaces[ws].SecretEnv) to a key of an
//     existing Secret, projected as /etc/driftwatch/secrets/<NAME>, and the
//     spec's secret_env_files point there; git credentials likewise at
//     /etc/driftwatch/secrets/git-credentials. Only those keys are
//     projected, not whole Secrets. A secret env name without a mapping is
//     refused: the daemon never copies a credential into a run Secret, so it
//     needs no read access to workload credentials.
//   - Sandbox: pod and runner container runAsNonRoot as 65532:65532, the
//     reporter as 65533:65533 (fsGroup 65532, files 0440),
//     readOnlyRootFilesystem with emptyDirs at /work (work dir, git cache)
//     and /tmp (runner only) and the handoff directory (both),
//     capabilities drop ALL, allowPrivilegeEscalation false, privileged
//     false, seccomp RuntimeDefault, automountServiceAccountToken false,
//     enableServiceLinks false, shareProcessNamespace false,
//     serviceAccountName Config.ServiceAccount, requests and limits
//     (Config.Resources, overridden per workspace, for the runner; small
//     fixed ones for the reporter). It passes the "restricted" Pod
//     Security level (tested against a real API server enforcing it).
//   - Lifecycle: restartPolicy Never, backoffLimit 0 (Kubernetes never
//     retries a plan; the next scheduled run is the retry), a podFailurePolicy
//     that ignores disruptions (DisruptionTarget: a drained node's pod is
//     replaced, not counted) and fails the Job on any non-zero exit of
//     either container,
//     activeDeadlineSeconds = the run's timeout + kill grace +
//     Config.StartupAllowance (the run's own timeout stops Terraform first
//     and still delivers an error result; the Job deadline is the hard
//     stop), ttlSecondsAfterFinished = Config.TTLAfterFinished.
//
// # Running
//
// Watch runs one Job informer and one Pod informer over the namespace,
// filtered by the managed-by label: one list and one watch each however many
// runs are in flight, no per-Job polling. Run then:
//
//  1. takes a per-workspace lock, refuses the run with a *BusyError if this
//     daemon already awaits another run of the workspace (a Run with the
//     same run id joins it instead), lists the workspace's Jobs by label and,
//     if one is active that this daemon does not await (a previous daemon's),
//     adopts it rather than starting another;
//  2. otherwise reads Config.CallbackCAFile (for every run, so a rotated
//     CA reaches the next one; unreadable: a "setup" error, nothing
//     created) into the spec's CallbackCA, creates a token
//     (remote.NewToken), arms the Receiver with
//     its hash, creates the Job (AlreadyExists: the same run was submitted
//     before; that Job is adopted) and the Secret;
//  3. waits for the first of: the result POSTed to the Receiver, taken
//     once the pod has succeeded (below); a second, different result
//     posted with the run's token (remote.ErrConflictingResults: the run
//     errors, keeping neither); the Job Failed (deadline →
//     terraform.ErrTimeout; otherwise the pod's story: OOMKilled, exit code
//     and the last line of its termination message, the runner
//     container's before the reporter's, eviction); a pod stuck on
//     ErrImagePull, ImagePullBackOff,
//     InvalidImageName, ErrImageNeverPull or CreateContainerConfigError (the
//     Job would only fail at its deadline, so it is deleted and the run
//     errors now); the Job deleted; a Complete Job whose result does not
//     follow within 10 s; or ctx done, which deletes the Job with background
//     propagation (batch/v1 Jobs orphan their pods by default) once no other
//     caller awaits it. Every failure is a *terraform.Error with phase "job"
//     ("submit" and "setup" before the Job exists) and a one-line reason.
//
// A result is held until the pod has succeeded (both containers exited 0,
// or the Job is Complete), not taken when it arrives: the reporter exits 0
// only after its own post was accepted, and the Receiver accepts only the
// first result, or the same one again. So if the token ever leaked and a
// forged result came first, the real one gets 409, the Receiver reports
// the conflict, the reporter exits non-zero, and the run errors instead of
// keeping the forgery; if the forger also killed the runner, the pod fails
// and the held result is dropped. This costs the pod's exit (a second or
// two). When Watch stops with a result held, the result is taken anyway:
// the pod posts once, and a restarted daemon could not get it again.
//
// "At most one active Job per workspace" holds within a daemon by the lock
// and the in-process registry, across restarts by the label check, and for a
// repeated submission of one run by the deterministic name. Two daemons
// creating at once is excluded by leader election (only the leader runs), not
// by this package.
//
// # Remediation Jobs
//
// Remediate runs an approved remediation as a Job built exactly like a
// detection's (same two containers, sandbox, mounts, deadline, failure
// policy, token, Receiver), labelled driftwatch.io/kind=remediate, whose
// spec carries a remote.Remediation: the approved change set and its hash,
// the workspace's rules, envelope and lock timeout. The runner container
// runs engine.Applier.Apply, asks the daemon's proceed check through the
// reporter right before `terraform apply` (it has no token), and hands its
// Outcome over instead of a plan. The
// two kinds share the one-Job-per-workspace rule but never adopt each
// other: a detection that finds a remediation Job of its workspace active
// (or the reverse) is refused with a *BusyError, since a plan cannot stand
// for an outcome nor the reverse.
//
// # Adoption after a restart
//
// A pod's reporter holds its token and keeps retrying delivery (403 while
// no daemon knows its run: the Receiver answers an unknown run as a wrong
// token) until its deadline, so a daemon that restarts in between loses
// nothing if it re-arms the Receiver. The token hash needed for that is
// kept in the Job's driftwatch.io/token-sha256 annotation with the deadline
// in driftwatch.io/expires-at, rather than in the store behind an interface
// the app implements, because:
//   - the Job is the one place both outlive the daemon and disappear
//     together: no store rows to reconcile with Jobs that the TTL
//     controller deleted, and no store dependency in this package;
//   - a SHA-256 of 256 random bits reveals nothing usable (it cannot be
//     presented as the token, and inverting it is infeasible), so readers of
//     Jobs learn nothing; the token itself is only in the run Secret;
//   - reading the token back from the Secret instead would need get on
//     secrets for the daemon; this needs only what it has (list jobs).
//
// Adopt lists active run Jobs, re-arms the Receiver for each and returns
// them; the app awaits each (Adopted.Wait, or Adopted.WaitOutcome for a
// remediation Job: it is awaited, never deleted, since stopping an apply
// half way leaves the infrastructure half reverted) and records the
// outcome under Adopted.RunID. If the app instead re-runs a run a restart cut short, Run adopts
// the Job it finds for the workspace, so a restart never duplicates a Job
// either way. Jobs whose outcome this daemon already took are never
// adopted, even while their pod is still exiting.
//
// When Watch returns (shutdown, lost leadership), awaited runs end with an
// error matching ErrStopped and their Jobs are left running for the next
// daemon to adopt; a Run whose own ctx ends first deletes its Job. So a
// daemon that wants its Jobs to survive a graceful restart stops Watch (and
// waits for it) before cancelling its runs, and leaves ErrStopped runs
// running in its store for the next daemon.
//
// Config is a defined type over kubecfg.Config, the leaf that declares
// runner.kubernetes's settings and checks them (Validate), so config embeds
// the same type and no field is copied between the two; ReadCallbackCA is
// cafile.Read, which config validation runs too.
//
// This package must not import config, store, audit or notify.
package kube
