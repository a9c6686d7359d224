// Package kube runs each workspace run as a sandboxed Kubernetes Job and
// returns its result through the runner.Runner seam. It is, with app, the
// only importer of client-go; the wire contract and the pod's side live in
// runner/remote, which has no Kubernetes dependency.
//
// # Building (pure)
//
// prepare maps a runner.Request onto the pod (which Secret keys are mounted
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
//   - The pod runs Config.Command + `runner --spec /etc/driftwatch/run/spec.json`
//     in Config.Image. The spec and the result token come from a per-run
//     Secret of the Job's name, mounted read-only at /etc/driftwatch/run.
//     The Job is created first and the Secret second, owned by the Job
//     (ownerReference with its UID), so the garbage collector deletes it
//     with the Job and no failure between the two calls can orphan a token:
//     if the Secret cannot be created the Job is deleted. The kubelet
//     retries a missing Secret volume, so the pod simply waits for it.
//   - Credentials are files, never env: each secret env name of the
//     workspace maps (Config.Workspaces[ws].SecretEnv) to a key of an
//     existing Secret, projected as /etc/driftwatch/secrets/<NAME>, and the
//     spec's secret_env_files point there; git credentials likewise at
//     /etc/driftwatch/secrets/git-credentials. Only those keys are
//     projected, not whole Secrets. A secret env name without a mapping is
//     refused: the daemon never copies a credential into a run Secret, so it
//     needs no read access to workload credentials.
//   - Sandbox: pod and container runAsNonRoot as 65532:65532 (fsGroup
//     65532, files 0440), readOnlyRootFilesystem with emptyDirs at /work
//     (work dir, git cache) and /tmp, capabilities drop ALL,
//     allowPrivilegeEscalation false, privileged false, seccomp
//     RuntimeDefault, automountServiceAccountToken false,
//     enableServiceLinks false, serviceAccountName Config.ServiceAccount,
//     requests and limits (Config.Resources, overridden per workspace). It
//     passes the "restricted" Pod Security level (tested against a real API
//     server enforcing it).
//   - Lifecycle: restartPolicy Never, backoffLimit 0 (Kubernetes never
//     retries a plan; the next scheduled run is the retry), a podFailurePolicy
//     that ignores disruptions (DisruptionTarget: a drained node's pod is
//     replaced, not counted) and fails the Job on any non-zero exit,
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
//  2. otherwise creates a token (remote.NewToken), arms the Receiver with
//     its hash, creates the Job (AlreadyExists: the same run was submitted
//     before; that Job is adopted) and the Secret;
//  3. waits for the first of: the result POSTed to the Receiver; the Job
//     Failed (deadline → runner.ErrTimeout; otherwise the pod's story:
//     OOMKilled, exit code and the last line of its termination message,
//     eviction); a pod stuck on ErrImagePull, ImagePullBackOff,
//     InvalidImageName, ErrImageNeverPull or CreateContainerConfigError (the
//     Job would only fail at its deadline, so it is deleted and the run
//     errors now); the Job deleted; a Complete Job whose result does not
//     follow within 10 s; or ctx done, which deletes the Job with background
//     propagation (batch/v1 Jobs orphan their pods by default) once no other
//     caller awaits it. Every failure is a *runner.Error with phase "job"
//     ("submit" and "setup" before the Job exists) and a one-line reason.
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
// detection's (same sandbox, mounts, deadline, failure policy, token,
// Receiver), labelled driftwatch.io/kind=remediate, whose spec carries a
// remote.Remediation: the approved change set and its hash, the
// workspace's rules, envelope and lock timeout. The pod runs
// remediate.Applier.Apply and delivers its Outcome instead of a plan. The
// two kinds share the one-Job-per-workspace rule but never adopt each
// other: a detection that finds a remediation Job of its workspace active
// (or the reverse) is refused with a *BusyError, since a plan cannot stand
// for an outcome nor the reverse.
//
// # Adoption after a restart
//
// A pod holds its token and keeps retrying delivery (404 while no daemon
// knows its run) until its deadline, so a daemon that restarts in between
// loses nothing if it re-arms the Receiver. The token hash needed for that is
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
// outcome under Adopted.RunID. If the app instead re-runs an interrupted run, Run adopts
// the Job it finds for the workspace, so a restart never duplicates a Job
// either way. Jobs whose outcome this daemon already took are never
// adopted, even while their pod is still exiting.
//
// When Watch returns (shutdown, lost leadership), awaited runs end with an
// error matching ErrStopped and their Jobs are left running for the next
// daemon to adopt; a Run whose own ctx ends first deletes its Job. So a
// daemon that wants its Jobs to survive a graceful restart stops Watch (and
// waits for it) before cancelling its runs, and records ErrStopped runs as
// interrupted.
//
// This package must not import config, store, audit or notify.
package kube
