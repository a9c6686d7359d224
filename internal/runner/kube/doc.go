// Package kube runs each workspace run as a sandboxed Kubernetes Job and
// returns its result through the runner.Runner seam, and a remediation's
// apply through Remediate (remediation.Applier, wired by app). It is, with
// app, the only importer of client-go; the wire contract and the pod's side
// live in runner/remote, which has no Kubernetes dependency.
//
// What it owns:
//
//   - Building (pure, golden-tested in testdata/): prepare maps a
//     terraform.Request onto the pod (mounted Secret keys, the run spec,
//     the deadline); buildJob and buildSecret make the Job (two containers:
//     "runner" runs Terraform and has no token, "reporter" alone mounts the
//     run's result token) and its per-run Secret, owned by the Job.
//   - Running: Watch (one Job and one Pod informer over the namespace,
//     their caches indexed by workspace and by Job, so that a run's
//     look-ups do not grow with the finished Jobs kept: index.go), then
//     Run and Remediate create a run's Job and await its result
//     through the remote.Receiver, its failure (deadline, pod failure,
//     image pull, deletion) or ctx. A result is taken only once the pod has
//     succeeded. The pod's log goes into the run's Request.Log as it comes
//     (Receiver.AttachLog, redacted of Request.Redact), an adopted
//     detection's too. Every failure is a *terraform.Error of phase job (submit
//     and setup before the Job exists).
//   - At most one active Job per workspace (*BusyError otherwise); a
//     detection and a remediation Job never stand for each other.
//   - Adoption after a restart: Adopt finds the active Jobs a previous
//     daemon left, re-arms the Receiver from the token hash in the Job's
//     annotation, and returns them as Adopted: a detection is awaited with
//     Wait, a remediation with AwaitRemediation, which never deletes the
//     Job and hands its outcome to an OutcomeRecorder (the remediation
//     controller's RecordAdopted). Runner.Jobs hands them to the run
//     lifecycle (run.Jobs) as runner.Adopted runs joined to that recorder.
//   - ErrStopped: when Watch returns, awaited runs end with it and their
//     Jobs are left running for the next daemon (Remediate's error then
//     also matches engine.ErrLeftRunning: the controller records nothing).
//
// Config is a defined type over config/kubecfg.Config, the leaf that
// declares runner.kubernetes's settings and checks them, so config embeds
// the same type and no field is copied; ReadCallbackCA is cafile.Read.
//
// Design notes (the mounts that keep the token from Terraform, the pod's
// sandbox and lifecycle, why a result is held, why the token hash lives on
// the Job): docs/architecture/terraform.md. What users see:
// docs/kubernetes.md.
//
// It uses the remediation engine's types (engine.Applier, ChangeSet,
// Outcome) and must not import config (but its leaf config/kubecfg),
// store, pipeline, run, notify or the remediation controller; only app
// constructs it.
package kube
