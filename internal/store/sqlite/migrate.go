package sqlite

import (
	"context"
	"fmt"
)

// applicationID marks a SQLite file as driftwatch's (PRAGMA application_id,
// bytes 68-71 of the header): "DrWt". Open refuses any other non-empty
// database rather than adding tables to it.
const applicationID = 0x44725774

// migrations[i] takes the schema from version i to i+1 (SQLite's PRAGMA
// user_version, PostgreSQL's driftwatch_schema table). Append only: never
// edit a migration that has shipped. They are written for SQLite; the
// dialect rewrites them for PostgreSQL (pgSchema): one list for both.
// Each runs in its own transaction together with the version bump, so a
// crash leaves the file at the old version or the new one.
//
// Times are INTEGER unix nanoseconds (UTC): they round-trip exactly and sort
// numerically, which RFC 3339 text with trimmed fractions does not. NULL is
// the zero time. Findings and phases are JSON arrays of the drift types.
var migrations = []string{
	// 1: runs and workspace state.
	`
PRAGMA application_id = ` + fmt.Sprint(applicationID) + `;

CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	workspace   TEXT NOT NULL,
	"trigger"   TEXT NOT NULL,
	started_at  INTEGER NOT NULL,
	finished_at INTEGER,
	status      TEXT NOT NULL,
	error       TEXT NOT NULL,
	tool        TEXT NOT NULL,
	findings    TEXT NOT NULL CHECK (json_valid(findings)),
	phases      TEXT NOT NULL CHECK (json_valid(phases))
) STRICT;

-- Runs: newest first per workspace; Prune ranks within a workspace.
CREATE INDEX runs_workspace_started ON runs (workspace, started_at);
-- RecoverRuns at startup: only the few running rows.
CREATE INDEX runs_running ON runs (started_at) WHERE status = 'running';

CREATE TABLE workspace_state (
	workspace          TEXT PRIMARY KEY,
	status             TEXT NOT NULL,
	since              INTEGER NOT NULL,
	-- The database itself refuses to delete the run a state points at.
	last_run_id        TEXT NOT NULL REFERENCES runs (id),
	last_run_at        INTEGER NOT NULL,
	last_success_at    INTEGER,
	fingerprint        TEXT NOT NULL,
	findings           TEXT NOT NULL CHECK (json_valid(findings)),
	error              TEXT NOT NULL,
	consecutive_errors INTEGER NOT NULL
) STRICT;

-- Lets the foreign key check a deleted run without scanning every state.
CREATE INDEX workspace_state_last_run ON workspace_state (last_run_id);
`,

	// 2: incidents, the notification outbox and notifiers' per-incident
	// state (store.AlertStore). Only new tables: the runs and states of a
	// version-1 file are untouched.
	`
-- One row per incident key. The key is stable for a workspace and class,
-- so a resolved incident's row is reused when the class comes back.
CREATE TABLE incidents (
	key          TEXT PRIMARY KEY,
	workspace    TEXT NOT NULL,
	class        TEXT NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('pending', 'open', 'resolved')),
	observations INTEGER NOT NULL,
	opened_at    INTEGER,
	notified_at  INTEGER,
	resolved_at  INTEGER,
	fingerprint  TEXT NOT NULL,
	findings     TEXT NOT NULL CHECK (json_valid(findings)),
	severity     TEXT NOT NULL
) STRICT;

-- Incidents(workspace) and FinishRunWithOutcome's read.
CREATE INDEX incidents_workspace ON incidents (workspace, key);
-- Incidents(""): the few live incidents, not the resolved history.
CREATE INDEX incidents_live ON incidents (workspace, key) WHERE state <> 'resolved';

-- One row per (message, notifier). seq is the enqueue order (max + 1 at
-- insert, under the write lock): "older" in DueMessages means a smaller
-- seq, whatever created_at says. A message is pending while delivered_at is
-- NULL and dead is 0. failed_seq orders failed attempts per notifier (for
-- OutboxStats' last error; MarkFailed is given no time).
CREATE TABLE outbox (
	id           TEXT PRIMARY KEY,
	seq          INTEGER NOT NULL UNIQUE,
	notifier     TEXT NOT NULL,
	incident_key TEXT NOT NULL,
	payload      BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_attempt INTEGER NOT NULL,
	last_error   TEXT NOT NULL DEFAULT '',
	failed_seq   INTEGER,
	delivered_at INTEGER,
	dead         INTEGER NOT NULL DEFAULT 0 CHECK (dead IN (0, 1))
) STRICT;

-- DueMessages: the oldest pending message of each (notifier, incident)
-- queue, and whether an older one exists. Partial: delivered history does
-- not slow the queue down.
CREATE INDEX outbox_pending ON outbox (notifier, incident_key, seq)
	WHERE delivered_at IS NULL AND dead = 0;
-- DueMessages' scan in enqueue order over pending messages only.
CREATE INDEX outbox_pending_seq ON outbox (seq, next_attempt)
	WHERE delivered_at IS NULL AND dead = 0;
-- Prune: delivered messages per notifier, newest first.
CREATE INDEX outbox_delivered ON outbox (notifier, delivered_at, seq)
	WHERE delivered_at IS NOT NULL;
-- MarkFailed's next failed_seq and OutboxStats' last error per notifier.
CREATE INDEX outbox_failed ON outbox (notifier, failed_seq)
	WHERE failed_seq IS NOT NULL;
-- Prune: is a resolved incident's queue empty?
CREATE INDEX outbox_incident ON outbox (incident_key)
	WHERE delivered_at IS NULL AND dead = 0;

-- What a notifier keeps per incident (a Slack parent message ts).
CREATE TABLE notifier_state (
	notifier     TEXT NOT NULL,
	incident_key TEXT NOT NULL,
	state        BLOB NOT NULL,
	updated_at   INTEGER NOT NULL,
	PRIMARY KEY (notifier, incident_key)
) STRICT, WITHOUT ROWID;

-- Prune: the states of a deleted incident, whatever the notifier.
CREATE INDEX notifier_state_incident ON notifier_state (incident_key);
`,

	// 3: remediations (store.RemediationStore) and daemon-wide settings
	// (the remediation pause flag). Only new tables.
	`
CREATE TABLE remediations (
	id              TEXT PRIMARY KEY,
	workspace       TEXT NOT NULL,
	detect_run_id   TEXT NOT NULL,
	apply_run_id    TEXT NOT NULL DEFAULT '',
	"commit"        TEXT NOT NULL,
	mode            TEXT NOT NULL,
	change_set      TEXT NOT NULL CHECK (json_valid(change_set)),
	change_set_hash TEXT NOT NULL,
	refusals        TEXT NOT NULL CHECK (json_valid(refusals)),
	state           TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'expired', 'running',
		'applied', 'failed', 'verification_failed', 'refused')),
	reason          TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	expires_at      INTEGER,
	decided_at      INTEGER,
	decided_by      TEXT NOT NULL DEFAULT '',
	finished_at     INTEGER,
	outcome         TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(outcome)),
	seq             INTEGER NOT NULL UNIQUE
) STRICT;

-- Remediations(workspace): newest first.
CREATE INDEX remediations_workspace ON remediations (workspace, seq);
-- ExpireRemediations and the apply loop: the few live ones.
CREATE INDEX remediations_live ON remediations (state, seq) WHERE state IN ('pending', 'approved', 'running');

CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
`,

	// 4: run logs (store.LogStore), deleted with their run by the foreign
	// key. Only a new table.
	`
CREATE TABLE run_logs (
	run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	log    BLOB NOT NULL
) STRICT, WITHOUT ROWID;
`,

	// 5: the severity rule that set an incident's severity (empty: its
	// class's). Older rows keep ''.
	`
ALTER TABLE incidents ADD COLUMN severity_rule TEXT NOT NULL DEFAULT '';
`,

	// 6: silences (store.SilenceStore) and held outbox messages.
	`
ALTER TABLE outbox ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1));
-- HeldWorkspaces and ReleaseHeld: the few held messages.
CREATE INDEX outbox_held ON outbox (incident_key, notifier, seq) WHERE held = 1;

CREATE TABLE silences (
	id         TEXT PRIMARY KEY,
	workspace  TEXT NOT NULL,
	labels     TEXT NOT NULL CHECK (json_valid(labels)),
	starts_at  INTEGER NOT NULL,
	ends_at    INTEGER NOT NULL,
	comment    TEXT NOT NULL,
	created_by TEXT NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX silences_ends ON silences (ends_at);
`,

	// 7: trends (StatsRuns). A covering index: a workspace's runs in a
	// window are one contiguous range of it, read without touching the
	// table, whose rows (findings JSON and all) are interleaved across
	// workspaces. Only a new index.
	`
CREATE INDEX runs_stats ON runs (workspace, started_at, status, finished_at, id);
`,

	// 8: the audit log (store.AuditStore): every mutating action
	// attempted, allowed or not. Only a new table. seq is the rowid:
	// entries are appended, and Prune keeps the newest by it.
	`
CREATE TABLE audit_log (
	seq    INTEGER PRIMARY KEY,
	at     INTEGER NOT NULL,
	actor  TEXT NOT NULL,
	method TEXT NOT NULL,
	roles  TEXT NOT NULL CHECK (json_valid(roles)),
	action TEXT NOT NULL,
	target TEXT NOT NULL,
	result TEXT NOT NULL,
	status INTEGER NOT NULL,
	detail TEXT NOT NULL,
	source TEXT NOT NULL
) STRICT;
-- AuditEntries: newest first, from a time; Prune: older than max_age.
CREATE INDEX audit_log_at ON audit_log (at, seq);
`,

	// 9: the audit log's anonymous entries, aggregated and capped apart
	// (store.AuditEntry.Anonymous), and the Slack replay cache
	// (store.ReplayStore). Existing entries are of count 1, not
	// anonymous. audit_counts is kept by triggers, so that RecordAudit
	// enforces each kind's cap without counting rows.
	`
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1);
ALTER TABLE audit_log ADD COLUMN anonymous INTEGER NOT NULL DEFAULT 0 CHECK (anonymous IN (0, 1));
ALTER TABLE audit_log ADD COLUMN peer TEXT NOT NULL DEFAULT '';
-- The minute (unix nanoseconds) an anonymous entry aggregates; NULL for others.
ALTER TABLE audit_log ADD COLUMN minute INTEGER;
-- The caps: each kind's oldest first.
CREATE INDEX audit_log_kind ON audit_log (anonymous, seq);
-- One anonymous entry per source, action and outcome per minute.
CREATE UNIQUE INDEX audit_log_aggregate ON audit_log (minute, peer, action, source, result, status, detail)
	WHERE anonymous = 1;

CREATE TABLE audit_counts (
	anonymous INTEGER PRIMARY KEY CHECK (anonymous IN (0, 1)),
	n         INTEGER NOT NULL
) STRICT;
INSERT INTO audit_counts (anonymous, n) VALUES (0, (SELECT count(*) FROM audit_log)), (1, 0);
CREATE TRIGGER audit_log_counted AFTER INSERT ON audit_log BEGIN
	UPDATE audit_counts SET n = n + 1 WHERE anonymous = NEW.anonymous;
END;
CREATE TRIGGER audit_log_uncounted AFTER DELETE ON audit_log BEGIN
	UPDATE audit_counts SET n = n - 1 WHERE anonymous = OLD.anonymous;
END;

CREATE TABLE slack_replay (
	signature  TEXT PRIMARY KEY,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX slack_replay_expires ON slack_replay (expires_at);
`,

	// 10: oidc mode's sessions (store.SessionStore), kept on the server.
	// Only a new table. id_hash is the SHA-256 of the session id the
	// browser's cookie holds: a copy of the file signs no one in.
	`
CREATE TABLE sessions (
	id_hash      BLOB PRIMARY KEY CHECK (length(id_hash) = 32),
	issuer       TEXT NOT NULL,
	subject      TEXT NOT NULL,
	name         TEXT NOT NULL,
	email        TEXT NOT NULL,
	user_groups  TEXT NOT NULL CHECK (json_valid(user_groups)),
	created_at   INTEGER NOT NULL,
	last_seen_at INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
-- Sign-out everywhere and the admin's list: one person's sessions.
CREATE INDEX sessions_subject ON sessions (subject, issuer);
-- PruneSessions: the expired ones.
CREATE INDEX sessions_expires ON sessions (expires_at);
`,

	// 11: acceptances (store.AcceptanceStore): drift accepted as code.
	// Only a new table. body is the acceptance's JSON, less the columns.
	`
CREATE TABLE acceptances (
	id          TEXT PRIMARY KEY,
	workspace   TEXT NOT NULL,
	state       TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	finished_at INTEGER,
	body        TEXT NOT NULL CHECK (json_valid(body))
) STRICT;
-- Acceptances: newest first per workspace; InterruptAcceptances: the running ones.
CREATE INDEX acceptances_workspace ON acceptances (workspace, created_at);
CREATE INDEX acceptances_running ON acceptances (created_at) WHERE state = 'running';
`,

	// 12: group incidents (store.GroupStore): drift of several
	// workspaces that shares one cause, alerted as one. Only a new table.
	// key is the incident key the group's outbox messages and notifier
	// states carry, unique among groups (DecideGroups also keeps it apart
	// from the incidents table's keys); members is the grouped findings'
	// JSON.
	`
CREATE TABLE group_incidents (
	id          TEXT PRIMARY KEY,
	key         TEXT NOT NULL UNIQUE,
	cause       TEXT NOT NULL,
	cause_key   TEXT NOT NULL,
	title       TEXT NOT NULL,
	state       TEXT NOT NULL CHECK (state IN ('open', 'resolved')),
	members     TEXT NOT NULL CHECK (json_valid(members)),
	workspaces  INTEGER NOT NULL,
	first_seen  INTEGER,
	last_seen   INTEGER,
	opened_at   INTEGER,
	notified_at INTEGER,
	resolved_at INTEGER,
	fingerprint TEXT NOT NULL,
	severity    TEXT NOT NULL
) STRICT;
-- GroupIncidents(false): the few open ones, most recently notified first.
CREATE INDEX group_incidents_open ON group_incidents (notified_at) WHERE state = 'open';
`,

	// 13: a workspace's provider versions (WorkspaceState.Providers and
	// CleanProviders, JSON objects of source address to version), for
	// grouping's provider cause. Existing rows know none.
	`
ALTER TABLE workspace_state ADD COLUMN providers TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(providers));
ALTER TABLE workspace_state ADD COLUMN clean_providers TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(clean_providers));
`,

	// 14: a workspace's managed instances with their resource identities
	// (WorkspaceState.Managed, a JSON array), what scans compare with.
	// Existing rows hold null: unknown until their next check (an empty
	// array is a state with nothing in it).
	`
ALTER TABLE workspace_state ADD COLUMN managed TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(managed));
`,
}

// migrate applies the missing migrations, one transaction each. The version
// is re-read inside each transaction (which holds the write lock from its
// start), so two processes opening a new file at once apply each migration
// exactly once.
func (s *Store) migrate(ctx context.Context) error {
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

func (s *Store) migrateOne(ctx context.Context) (done bool, err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	version, err := s.d.version(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("migrate: read schema version: %w", err)
	}
	switch {
	case version > int64(len(s.migrations)):
		return false, newerSchemaError(version, len(s.migrations))
	case version == int64(len(s.migrations)):
		return true, nil
	}
	next := version + 1
	if _, err := tx.ExecContext(ctx, s.d.schema(s.migrations[version])); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", next, err)
	}
	if err := s.d.setVersion(ctx, tx, next); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", next, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", next, err)
	}
	s.logger.Info("applied schema migration", "schema_version", next)
	return false, nil
}
