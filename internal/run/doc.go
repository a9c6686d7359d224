// Package run is the run lifecycle, as one noun: a run of a workspace is
// queued (recorded at once, with a live log that can be followed and a
// cancel that works before it starts), started, and ends with a verdict
// (clean, drift, errored: recorded with the incident decisions and outbox
// messages in one store transaction), cancelled (on request, queued or
// running), or errored by a restart (RecoverRuns at the next start). Its
// Manager owns the scheduler's queue and the registry of live runs, so
// the daemon, the HTTP API (Trigger, Cancel, Live), remediation (QueueApply,
// Detect) and the Kubernetes adoption path (Adopting, AwaitAdopted) all go
// through one place. Lead is what the daemon does while it leads: take
// the store lock, adopt a previous daemon's Jobs and watch them (Jobs),
// recover, then schedule beside the loops it is handed. Trigger's
// refusals are the API's (schedule/refusal): a busy workspace's is a
// refusal.BusyError that names the run.
//
// What it owns: the order of a run's records (queued before cancelled,
// started before finished, the log saved before its followers end), the
// per-workspace state cache the metrics read, which workspaces are busy
// with an adopted Job, and what a restart does with what the previous
// process left: runs that were running are errored ("daemon restarted")
// and their workspaces re-run; queued runs are queued again under their
// own ids. A run whose plan the cloud API throttled (drift.Throttled), in a
// workspace of a concurrency group, holds the group (schedule's Throttle)
// and is recorded errored without touching state or incidents; a
// remediation's apply run gets a live log and keeps it, like a detection.
//
// A record the store cannot write because its storage is unavailable (a
// full disk: store.ErrUnavailable) is retried with backoff until it is
// written or the daemon stops: a verdict is never dropped while the
// daemon runs, and the run holds its workspace meanwhile, so no slot runs
// it twice.
//
// What it meets through named interfaces (Options): the current config
// (Inventory: a workspace's target, the log bound), the incident hand-off
// (Incidents: Outcome, evaluated by the store inside the transaction that
// records the run, so the run and its incidents and outbox messages commit
// together; the inventory's current alert plan), Recorded after that
// commit (the outbox's wake), who leads (Leader) and
// remediation (Remediation: Apply for remediate runs, AfterDetect after
// every recorded detection). Scans compare with the recorded states
// (storeFleet, the Auditor's pipeline.Fleet unless given one: read from
// the store at each scan, waiting a while for workspaces never checked).
//
// What it must not touch: it does not start Terraform (the pipeline.Auditor
// and its runner do), decide incidents (Incidents does), deliver
// notifications (Recorded wakes the outbox), decide remediations, or know
// the runner mode: an adopted Kubernetes Job reaches it as a
// runner.Runner. Run ids are minted in one place, drift.NewRunID (the
// scheduler takes one per queued run). Its user is app.
package run
