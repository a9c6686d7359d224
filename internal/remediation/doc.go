// Package remediation is the daemon's remediation controller: it turns
// what detection runs propose into stored remediations and moves each
// through its lifecycle, up to the apply and its recorded outcome.
// internal/remediation/engine is the core it drives (the envelope, the change set
// and the guarded apply); this package decides when, and remembers.
//
// # What it owns
//
//   - Proposals (AfterDetect): the envelope evaluated on a drifted
//     detection run, one remediation per change set (a new one supersedes
//     a pending proposal whose drift changed; a rejected, failed or
//     refused one is not proposed again, unless refused for a passing
//     reason).
//   - The lifecycle: approval and rejection (the API's side: List, Get,
//     Approve, Reject, Status, SetPaused, which is server's
//     RemediationControl; a decision is recorded as Options.Caller's
//     caller, else WithActor's, else "api"), expiry (Run), the kill switch (config and the
//     persisted pause flag) and a workspace's remediation turned off by
//     the config (checked at approve, at a reload: Reloaded, every tick of
//     Run, at the apply and in the proceed check).
//   - The apply (Apply), in the workspace's scheduler slot (Run queues it
//     through Host.QueueApply with TriggerRemediate; the daemon's
//     scheduler job calls Apply), through an Applier: in this process
//     (InProcess) or in a Kubernetes Job (the kubernetes runner, which app
//     wires in; ErrLeftRunning, engine's, when the daemon stops first).
//     Its outcome is recorded on the remediation and as a run, counted
//     (driftwatch_remediations_total) and followed by a verification
//     detection (Host.Detect).
//   - A remediation Job's proceed check (MayApply), and the outcome of a
//     Job a previous daemon left applying, once the kubernetes runner
//     awaited it (RecordAdopted, a kube.OutcomeRecorder).
//   - Announcements on the workspace's open drift incident, written in the
//     same transaction as the remediation (store's ...WithAlert).
//
// # What it gets, and must not touch
//
// It has no pointer into the daemon. What is the daemon's, and changes
// while it runs, comes through Host, read at every use: the current
// config, a workspace's target, whether this daemon leads (a standby
// writes nothing), queueing an apply in a workspace's slot, the
// verification detection, a workspace's alert plan and waking the
// outbox. A workspace's target is a Target (its run request and rules),
// not pipeline's. Fixed dependencies come in Options: the store (Store, the
// narrow store.RemediationStore plus StartRun), the Applier, metrics and
// the logger.
//
// It must not run detections, schedule, or hold runs, the run registry,
// the leader election or the config's loading: it asks the Host, so that
// the daemon's run lifecycle stays in one place. It never runs Terraform
// itself (remediation/engine and the kube runner do). It must not import app,
// server (the API's hash-mismatch error comes in as
// Options.HashMismatchErr, as server takes the scheduler's errors),
// store/sqlite, the notifier implementations, client-go, nor (depguard
// says so) the runners, pipeline or run: the runners' folder stands above
// this one, since their Jobs run the engine.
package remediation
