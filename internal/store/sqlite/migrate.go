package sqlite

import (
	"context"
	"fmt"
)

// applicationID marks a SQLite file as driftwatch's (PRAGMA application_id,
// bytes 68-71 of the header): "DrWt". Open refuses any other non-empty
// database rather than adding tables to it.
const applicationID = 0x44725774

// migrations[i] takes the schema from version i to i+1 (PRAGMA
// user_version). Append only: never edit a migration that has shipped.
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
-- MarkInterrupted at startup: only the few running rows.
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
	var version int64
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, fmt.Errorf("migrate: read schema version: %w", err)
	}
	switch {
	case version > int64(len(migrations)):
		return false, newerSchemaError(version)
	case version == int64(len(migrations)):
		return true, nil
	}
	next := version + 1
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", next, err)
	}
	// PRAGMA takes no bind parameters; next is an integer we computed.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", next)); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", next, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", next, err)
	}
	s.logger.Info("applied schema migration", "schema_version", next)
	return false, nil
}
