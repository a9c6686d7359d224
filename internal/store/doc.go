// Package store defines what driftwatch remembers, as interfaces and plain
// data: run history and the current state of every workspace (Store),
// queued runs (QueueStore), incidents, the notification outbox and each
// notifier's per-incident state (AlertStore, OutboxStore), run logs
// (LogStore), remediations with the global pause flag
// (RemediationStore), silences (SilenceStore), acceptances
// (AcceptanceStore) and group incidents, one per cause shared by several
// workspaces' drift (GroupStore); DaemonStore is all of them. StatsReader, optional,
// reads run history for trends (GET /api/v1/stats); so are AuditStore and
// ReplayStore (ReplayOf finds the latter). Every write is durable
// when it returns, and a run's consequences (state, incidents, messages)
// are written in its one transaction.
//
// The implementation (store/sqlite) keeps it in one embedded SQLite file
// or in a PostgreSQL database; store/storetest is the contract every
// implementation passes, on both.
// Payloads other packages define travel as bytes (an outbox message's
// notify.Message JSON, a remediation's engine.Outcome JSON).
//
// Nothing here knows about runners, notifiers or the pipeline: it imports
// only drift of driftwatch's packages, and must not import audit, notify,
// runner, incident, remediation/engine, config or store/sqlite.
package store
