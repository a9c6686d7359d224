package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

const runColumns = `id, workspace, "trigger", started_at, finished_at, status, error, tool, findings, phases`

const stateColumns = `workspace, status, since, last_run_id, last_run_at, last_success_at, fingerprint, findings, error, consecutive_errors`

// providersSchema is the schema version that added workspace_state's
// providers and clean_providers.
const providersSchema = 13

// withProviders reports whether this store's schema has the providers
// columns: a store opened at an older version (the migration tests'
// files) reads and writes the state without them.
func (s *Store) withProviders() bool { return len(s.migrations) >= providersSchema }

// managedSchema is the schema version that added workspace_state's
// managed column.
const managedSchema = 14

// withManaged reports whether this store's schema has the managed column.
func (s *Store) withManaged() bool { return len(s.migrations) >= managedSchema }

// stateCols are the workspace_state columns this store reads and writes.
func (s *Store) stateCols() string {
	cols := stateColumns
	if s.withProviders() {
		cols += ", providers, clean_providers"
	}
	if s.withManaged() {
		cols += ", managed"
	}
	return cols
}

// StartRun records r as running. Status and FinishedAt are ignored; ID,
// Workspace and StartedAt are required, and the ID must be new.
func (s *Store) StartRun(ctx context.Context, r store.Run) (err error) {
	defer s.noteWrite(&err)
	if err := checkStart(r); err != nil {
		return fmt.Errorf("start run %q: %w", r.ID, err)
	}
	started, err := nanos(r.StartedAt)
	if err != nil {
		return fmt.Errorf("start run %q: started_at: %w", r.ID, err)
	}
	findings, phases, err := encodeRun(r)
	if err != nil {
		return fmt.Errorf("start run %q: %w", r.ID, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)`,
		r.ID, r.Workspace, r.Trigger, started, string(store.RunRunning), r.Error, r.Tool, findings, phases)
	if isDuplicate(err) {
		return fmt.Errorf("start run %q: a run with this id already exists", r.ID)
	}
	if err != nil {
		return fmt.Errorf("start run %q: %w", r.ID, err)
	}
	return nil
}

func checkStart(r store.Run) error {
	switch {
	case r.ID == "":
		return errors.New("id is required")
	case r.Workspace == "":
		return errors.New("workspace is required")
	case r.StartedAt.IsZero():
		return errors.New("started_at is required")
	}
	return nil
}

// FinishRun records the outcome of a running run and updates its
// workspace's state, in one transaction. The outcome is r's FinishedAt
// (required), Status (a drift status: clean, pending, drift, forbidden or
// errored), Error, Tool, Findings and Phases; the run's workspace, trigger
// and start come from StartRun, and r.Workspace, if set, must match. An
// unknown ID is store.ErrNotFound; a run that is no longer running (finished
// or interrupted) is an error.
func (s *Store) FinishRun(ctx context.Context, r store.Run) (before, after store.WorkspaceState, err error) {
	return s.finishRun(ctx, r, nil)
}

// finishRun is FinishRun and, when decide is not nil, FinishRunWithOutcome:
// the run's outcome, the workspace's new state and decide's consequences are
// written in one transaction, or nothing is.
func (s *Store) finishRun(ctx context.Context, r store.Run, decide store.Outcome) (before, after store.WorkspaceState, err error) {
	defer s.noteWrite(&err)
	if r.Status.Severity() < 0 {
		return before, after, fmt.Errorf("finish run %q: status %q is not a finished status", r.ID, r.Status)
	}
	if r.FinishedAt.IsZero() {
		return before, after, fmt.Errorf("finish run %q: finished_at is required", r.ID)
	}
	finished, err := nanos(r.FinishedAt)
	if err != nil {
		return before, after, fmt.Errorf("finish run %q: finished_at: %w", r.ID, err)
	}
	findings, phases, err := encodeRun(r)
	if err != nil {
		return before, after, fmt.Errorf("finish run %q: %w", r.ID, err)
	}

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return before, after, fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit

	cur, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, r.ID))
	if errors.Is(err, sql.ErrNoRows) {
		return before, after, fmt.Errorf("finish run %q: %w", r.ID, store.ErrNotFound)
	}
	if err != nil {
		return before, after, fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	if cur.Status != store.RunRunning {
		return before, after, fmt.Errorf("finish run %q: run is %s, not running", r.ID, cur.Status)
	}
	if r.Workspace != "" && r.Workspace != cur.Workspace {
		return before, after, fmt.Errorf("finish run %q: workspace %q does not match the started run's %q", r.ID, r.Workspace, cur.Workspace)
	}

	before, err = s.scanState(tx.QueryRowContext(ctx, `SELECT `+s.stateCols()+` FROM workspace_state WHERE workspace = ?`, cur.Workspace))
	if errors.Is(err, sql.ErrNoRows) {
		before, err = store.WorkspaceState{Workspace: cur.Workspace}, nil
	}
	if err != nil {
		return store.WorkspaceState{}, after, fmt.Errorf("finish run %q: workspace %q: %w", r.ID, cur.Workspace, err)
	}

	done := cur
	done.FinishedAt = r.FinishedAt.UTC()
	done.Status = r.Status
	done.Error = r.Error
	done.Tool = r.Tool
	done.Findings = r.Findings
	done.Phases = r.Phases
	done.Providers = r.Providers
	done.Managed = r.Managed
	after = nextState(before, done)

	if _, err := tx.ExecContext(ctx, `UPDATE runs SET finished_at = ?, status = ?, error = ?, tool = ?, findings = ?, phases = ? WHERE id = ?`,
		finished, string(r.Status), r.Error, r.Tool, findings, phases, r.ID); err != nil {
		return store.WorkspaceState{}, store.WorkspaceState{}, fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	if err := s.upsertState(ctx, tx, after); err != nil {
		return store.WorkspaceState{}, store.WorkspaceState{}, fmt.Errorf("finish run %q: workspace %q: %w", r.ID, cur.Workspace, err)
	}
	if decide != nil {
		if err := s.applyOutcome(ctx, tx, done, before, after, decide); err != nil {
			return store.WorkspaceState{}, store.WorkspaceState{}, fmt.Errorf("finish run %q: %w", r.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return store.WorkspaceState{}, store.WorkspaceState{}, fmt.Errorf("finish run %q: %w", r.ID, err)
	}
	return before, after, nil
}

// nextState is the state after run finished, given the state before it (the
// zero state, Workspace set, for a workspace's first run). Since moves only
// when the status changes; an errored run says nothing about drift, so it
// keeps the last successful run's findings, fingerprint and LastSuccessAt.
func nextState(before store.WorkspaceState, run store.Run) store.WorkspaceState {
	after := before
	after.Findings = cloneFindings(before.Findings)
	after.Workspace = run.Workspace
	after.Status = run.Status
	if before.Status != run.Status {
		after.Since = run.FinishedAt.UTC()
	}
	after.LastRunID = run.ID
	after.LastRunAt = run.StartedAt.UTC()
	if run.Status == drift.StatusErrored {
		after.Error = run.Error
		after.ConsecutiveErrors = before.ConsecutiveErrors + 1
		return after
	}
	after.Findings = cloneFindings(run.Findings)
	after.Fingerprint = drift.Fingerprint(run.Workspace, run.Findings)
	// A run that did not read the lock file (a fast path, an older
	// runner) says nothing about the versions either.
	if run.Providers != nil {
		after.Providers = maps.Clone(run.Providers)
		if run.Status == drift.StatusClean {
			after.CleanProviders = maps.Clone(run.Providers)
		}
	}
	if run.Managed != nil {
		after.Managed = slices.Clone(run.Managed)
	}
	after.LastSuccessAt = run.FinishedAt.UTC()
	after.Error = ""
	after.ConsecutiveErrors = 0
	return after
}

// cloneFindings copies fs deeply enough that the caller's slices and the
// returned state never alias (nil stays nil, empty stays empty).
func cloneFindings(fs []drift.Finding) []drift.Finding {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Attributes = slices.Clone(out[i].Attributes)
		out[i].SeenIn = slices.Clone(out[i].SeenIn)
	}
	return out
}

func (s *Store) upsertState(ctx context.Context, tx *sql.Tx, st store.WorkspaceState) error {
	since, err := nanos(st.Since)
	if err != nil {
		return fmt.Errorf("since: %w", err)
	}
	lastRun, err := nanos(st.LastRunAt)
	if err != nil {
		return fmt.Errorf("last_run_at: %w", err)
	}
	lastSuccess, err := nanos(st.LastSuccessAt)
	if err != nil {
		return fmt.Errorf("last_success_at: %w", err)
	}
	findings, err := json.Marshal(st.Findings)
	if err != nil {
		return fmt.Errorf("encode findings: %w", err)
	}
	args := []any{st.Workspace, string(st.Status), since, st.LastRunID, lastRun, lastSuccess, st.Fingerprint, string(findings), st.Error, st.ConsecutiveErrors}
	values, set := "?, ?, ?, ?, ?, ?, ?, ?, ?, ?", ""
	if s.withProviders() {
		for _, m := range []map[string]string{st.Providers, st.CleanProviders} {
			if m == nil {
				m = map[string]string{}
			}
			b, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode providers: %w", err)
			}
			args = append(args, string(b))
		}
		values, set = values+", ?, ?", `,
	providers = excluded.providers,
	clean_providers = excluded.clean_providers`
	}
	if s.withManaged() {
		b, err := json.Marshal(st.Managed) // nil: null, unknown
		if err != nil {
			return fmt.Errorf("encode managed: %w", err)
		}
		args = append(args, string(b))
		values, set = values+", ?", set+`,
	managed = excluded.managed`
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO workspace_state (`+s.stateCols()+`) VALUES (`+values+`)
ON CONFLICT (workspace) DO UPDATE SET
	status = excluded.status,
	since = excluded.since,
	last_run_id = excluded.last_run_id,
	last_run_at = excluded.last_run_at,
	last_success_at = excluded.last_success_at,
	fingerprint = excluded.fingerprint,
	findings = excluded.findings,
	error = excluded.error,
	consecutive_errors = excluded.consecutive_errors`+set, args...)
	return err
}

// RecoverRuns finishes every running run errored at at, with Error
// store.RunRestartedError, and returns them oldest first, with the queued
// runs (left queued), oldest first. Workspace states are left alone: a
// restart says nothing about drift. Runs whose id is in keep are left
// alone too.
func (s *Store) RecoverRuns(ctx context.Context, at time.Time, keep ...string) (_ store.Recovered, err error) {
	defer s.noteWrite(&err)
	var out store.Recovered
	if at.IsZero() {
		return out, errors.New("recover runs: time is required")
	}
	finished, err := nanos(at)
	if err != nil {
		return out, fmt.Errorf("recover runs: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("recover runs: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rows, err := tx.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE status IN (?, ?) ORDER BY started_at, id`,
		string(store.RunRunning), string(store.RunQueued))
	if err != nil {
		return out, fmt.Errorf("recover runs: %w", err)
	}
	found, err := collectRuns(rows)
	if err != nil {
		return out, fmt.Errorf("recover runs: %w", err)
	}
	kept := make(map[string]bool, len(keep))
	for _, id := range keep {
		kept[id] = true
	}
	for _, r := range found {
		switch {
		case kept[r.ID]:
		case r.Status == store.RunQueued:
			out.Queued = append(out.Queued, r)
		default:
			out.Errored = append(out.Errored, r)
		}
	}
	for _, r := range out.Errored {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE id = ? AND status = ?`,
			string(drift.StatusErrored), finished, store.RunRestartedError, r.ID, string(store.RunRunning))
		if err != nil {
			return store.Recovered{}, fmt.Errorf("recover runs: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return store.Recovered{}, fmt.Errorf("recover runs: run %s: %w", r.ID, err)
		}
		if n != 1 {
			// Cannot happen while this transaction holds the write lock.
			return store.Recovered{}, fmt.Errorf("recover runs: run %s: updated %d rows", r.ID, n)
		}
	}
	if err := tx.Commit(); err != nil {
		return store.Recovered{}, fmt.Errorf("recover runs: %w", err)
	}
	for i := range out.Errored {
		out.Errored[i].Status, out.Errored[i].Error, out.Errored[i].FinishedAt = drift.StatusErrored, store.RunRestartedError, at.UTC()
	}
	return out, nil
}

// Run returns one run; an unknown id is store.ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("run %q: %w", id, err)
	}
	return r, nil
}

// Runs lists a workspace's runs, newest start first (ties by id), at most
// limit of them (0: all). A workspace without runs has an empty list.
func (s *Store) Runs(ctx context.Context, workspace string, limit int) ([]store.Run, error) {
	if limit < 0 {
		return nil, fmt.Errorf("runs of %q: negative limit %d", workspace, limit)
	}
	n := int64(limit)
	if limit == 0 {
		n = math.MaxInt64 // no limit, in both databases
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+runColumns+` FROM runs WHERE workspace = ? ORDER BY started_at DESC, id DESC LIMIT ?`, workspace, n)
	if err != nil {
		return nil, fmt.Errorf("runs of %q: %w", workspace, err)
	}
	runs, err := collectRuns(rows)
	if err != nil {
		return nil, fmt.Errorf("runs of %q: %w", workspace, err)
	}
	return runs, nil
}

// Workspace returns one workspace's state; a workspace that has never
// finished a run is store.ErrNotFound.
func (s *Store) Workspace(ctx context.Context, name string) (store.WorkspaceState, error) {
	st, err := s.scanState(s.r.QueryRowContext(ctx, `SELECT `+s.stateCols()+` FROM workspace_state WHERE workspace = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.WorkspaceState{}, fmt.Errorf("workspace %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return store.WorkspaceState{}, fmt.Errorf("workspace %q: %w", name, err)
	}
	return st, nil
}

// Workspaces lists every workspace that has state, ordered by name (byte
// order).
func (s *Store) Workspaces(ctx context.Context) ([]store.WorkspaceState, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+s.stateCols()+` FROM workspace_state ORDER BY workspace`)
	if err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	defer rows.Close()
	var out []store.WorkspaceState
	for rows.Next() {
		st, err := s.scanState(rows)
		if err != nil {
			return nil, fmt.Errorf("workspaces: %w", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	return out, nil
}

// Prune deletes finished runs (finished or interrupted; never running ones)
// that are beyond the newest keep finished runs of their workspace, by
// start, or that finished before olderThan. keep 0 sets no count limit and
// a zero olderThan no age limit, so Prune(ctx, 0, time.Time{}) deletes
// no runs. The run a workspace state points at is never deleted. It returns
// how many runs it deleted.
//
// In the same transaction it trims the alert tables (see pruneAlerts):
// delivered outbox messages beyond the newest 1000 per notifier or
// delivered before olderThan, and incidents and group incidents resolved
// before olderThan; and the audit log (see pruneAudit): entries recorded
// before olderThan and beyond the newest 100,000 of identified callers
// and 10,000 anonymous ones (which RecordAudit also enforces as it
// inserts); and finished acceptances as it does runs (beyond keep per
// workspace, or finished before olderThan). Those deletions are logged,
// not counted in the result, which keeps meaning runs.
func (s *Store) Prune(ctx context.Context, keep int, olderThan time.Time) (_ int, err error) {
	defer s.noteWrite(&err)
	if keep < 0 {
		return 0, fmt.Errorf("prune: negative keep %d", keep)
	}
	var cutoff sql.NullInt64
	if !olderThan.IsZero() {
		var err error
		if cutoff, err = nanos(olderThan); err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, `
DELETE FROM runs WHERE id IN (
	SELECT id FROM (
		SELECT id, finished_at,
			row_number() OVER (PARTITION BY workspace ORDER BY started_at DESC, id DESC) AS newest
		FROM runs
		WHERE finished_at IS NOT NULL
	) AS ranked
	WHERE (?1 > 0 AND newest > ?1) OR (CAST(?2 AS BIGINT) IS NOT NULL AND finished_at < ?2)
)
AND id NOT IN (SELECT last_run_id FROM workspace_state)`, keep, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	pruned, err := s.pruneAlerts(ctx, tx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	audited, err := s.pruneAudit(ctx, tx, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	// Finished acceptances, as runs: beyond keep per workspace, or
	// finished before the cutoff.
	accepted, err := tx.ExecContext(ctx, `
DELETE FROM acceptances WHERE id IN (
	SELECT id FROM (
		SELECT id, finished_at,
			row_number() OVER (PARTITION BY workspace ORDER BY created_at DESC, id DESC) AS newest
		FROM acceptances
		WHERE finished_at IS NOT NULL
	) AS ranked
	WHERE (?1 > 0 AND newest > ?1) OR (CAST(?2 AS BIGINT) IS NOT NULL AND finished_at < ?2)
)`, keep, cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune: acceptances: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	if pruned.messages > 0 || pruned.incidents > 0 || pruned.groups > 0 {
		s.logger.Info("pruned delivered notifications and resolved incidents",
			"messages", pruned.messages, "incidents", pruned.incidents, "group_incidents", pruned.groups,
			"notifier_states", pruned.states)
	}
	if audited > 0 {
		s.logger.Info("pruned audit log entries", "entries", audited)
	}
	if a, _ := accepted.RowsAffected(); a > 0 {
		s.logger.Info("pruned finished acceptances", "acceptances", a)
	}
	return int(n), nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (store.Run, error) {
	var (
		r                store.Run
		status           string
		started          int64
		finished         sql.NullInt64
		findings, phases string
	)
	if err := sc.Scan(&r.ID, &r.Workspace, &r.Trigger, &started, &finished, &status, &r.Error, &r.Tool, &findings, &phases); err != nil {
		return store.Run{}, err
	}
	r.Status = drift.Status(status)
	r.StartedAt = fromNanos(sql.NullInt64{Int64: started, Valid: true})
	r.FinishedAt = fromNanos(finished)
	if err := json.Unmarshal([]byte(findings), &r.Findings); err != nil {
		return store.Run{}, fmt.Errorf("run %q: decode findings: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(phases), &r.Phases); err != nil {
		return store.Run{}, fmt.Errorf("run %q: decode phases: %w", r.ID, err)
	}
	return r, nil
}

func collectRuns(rows *sql.Rows) ([]store.Run, error) { return collect(rows, scanRun) }

// collect reads and closes rows, each through scan.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func (s *Store) scanState(sc scanner) (store.WorkspaceState, error) {
	var (
		st               store.WorkspaceState
		status, findings string
		since, lastRun   int64
		lastSuccess      sql.NullInt64
	)
	dest := []any{&st.Workspace, &status, &since, &st.LastRunID, &lastRun, &lastSuccess, &st.Fingerprint, &findings, &st.Error, &st.ConsecutiveErrors}
	providers, cleanProviders, managed := "{}", "{}", "null"
	if s.withProviders() {
		dest = append(dest, &providers, &cleanProviders)
	}
	if s.withManaged() {
		dest = append(dest, &managed)
	}
	if err := sc.Scan(dest...); err != nil {
		return store.WorkspaceState{}, err
	}
	for _, p := range []struct {
		raw string
		to  *map[string]string
	}{{providers, &st.Providers}, {cleanProviders, &st.CleanProviders}} {
		if err := json.Unmarshal([]byte(p.raw), p.to); err != nil {
			return store.WorkspaceState{}, fmt.Errorf("workspace %q: decode providers: %w", st.Workspace, err)
		}
		if len(*p.to) == 0 {
			*p.to = nil
		}
	}
	if err := json.Unmarshal([]byte(managed), &st.Managed); err != nil {
		return store.WorkspaceState{}, fmt.Errorf("workspace %q: decode managed: %w", st.Workspace, err)
	}
	st.Status = drift.Status(status)
	st.Since = fromNanos(sql.NullInt64{Int64: since, Valid: true})
	st.LastRunAt = fromNanos(sql.NullInt64{Int64: lastRun, Valid: true})
	st.LastSuccessAt = fromNanos(lastSuccess)
	if err := json.Unmarshal([]byte(findings), &st.Findings); err != nil {
		return store.WorkspaceState{}, fmt.Errorf("workspace %q: decode findings: %w", st.Workspace, err)
	}
	return st, nil
}

func encodeRun(r store.Run) (findings, phases string, err error) {
	f, err := json.Marshal(r.Findings)
	if err != nil {
		return "", "", fmt.Errorf("encode findings: %w", err)
	}
	p, err := json.Marshal(r.Phases)
	if err != nil {
		return "", "", fmt.Errorf("encode phases: %w", err)
	}
	return string(f), string(p), nil
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos encodes t as unix nanoseconds; the zero time is NULL. Times outside
// 1677-09-21..2262-04-11 (what int64 nanoseconds can hold) are refused
// rather than wrapped.
func nanos(t time.Time) (sql.NullInt64, error) {
	if t.IsZero() {
		return sql.NullInt64{}, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return sql.NullInt64{}, fmt.Errorf("time %s is out of range", t.Format(time.RFC3339Nano))
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}, nil
}

// fromNanos decodes nanos; times come back in UTC (compare with Equal).
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
