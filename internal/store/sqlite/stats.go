package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

var _ store.StatsReader = (*Store)(nil)

// Status sets of StatsRuns, as SQL lists.
const (
	verdictStatuses = `'clean', 'pending', 'validation', 'drift', 'forbidden', 'errored'`
	successStatuses = `'clean', 'pending', 'validation', 'drift', 'forbidden'`
	quietStatuses   = `'clean', 'pending', 'validation'`
	driftStatuses   = `'drift', 'forbidden'`
	// driftKinds are the finding kinds DriftedTypes counts, unmanagedKinds
	// UnmanagedTypes', scanKinds ScanFound's (a scan's).
	driftKinds     = `'drift', 'forbidden'`
	unmanagedKinds = `'unmanaged'`
	scanKinds      = `'unmanaged', 'managed_twice'`
)

const statsRunColumns = `id, workspace, started_at, finished_at, status`

// StatsRuns streams the runs with a verdict that started at or after
// q.Since, by workspace then start, each workspace's first one preceded
// by its context runs (store.StatsReader documents which). It reads one
// snapshot: a read transaction on the read pool. Each workspace's window
// is one range of the covering index runs_stats (schema version 7), read
// row by row (four narrow columns, no JSON, never the table), so memory
// does not grow with the number of runs; its context costs a few more
// look-ups in the same index. Runs that started in the same nanosecond
// come in no particular order.
func (s *Store) StatsRuns(ctx context.Context, q store.StatsQuery, fn func(store.StatsRun) error) error {
	since, err := nanos(q.Since)
	if err != nil || !since.Valid {
		return fmt.Errorf("stats runs: since %s is not a usable time", q.Since)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("stats runs: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo

	names := slices.Clone(q.Workspaces)
	if len(names) == 0 {
		if names, err = runWorkspaces(ctx, tx); err != nil {
			return fmt.Errorf("stats runs: %w", err)
		}
	} else {
		slices.Sort(names)
		names = slices.Compact(names)
	}
	window, err := tx.PrepareContext(ctx, `SELECT id, started_at, finished_at, status FROM runs
WHERE workspace = ? AND started_at >= ? AND finished_at IS NOT NULL AND status IN (`+verdictStatuses+`)
ORDER BY started_at`)
	if err != nil {
		return fmt.Errorf("stats runs: %w", err)
	}
	defer window.Close()
	for _, ws := range names {
		if err := statsWorkspace(ctx, tx, window, ws, since.Int64, fn); err != nil {
			return err
		}
	}
	return nil
}

// runWorkspaces lists the workspaces that have runs, by name: one index
// seek per workspace (a recursive walk of runs_workspace_started), not a
// scan of every run.
func runWorkspaces(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE w (name) AS (
	SELECT min(workspace) FROM runs
	UNION ALL
	SELECT (SELECT min(workspace) FROM runs WHERE workspace > w.name) FROM w WHERE w.name IS NOT NULL
)
SELECT name FROM w WHERE name IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// statsWorkspace streams one workspace: its context runs if it has runs
// in the window, then those runs.
func statsWorkspace(ctx context.Context, tx *sql.Tx, window *sql.Stmt, ws string, since int64, fn func(store.StatsRun) error) error {
	rows, err := tx.StmtContext(ctx, window).QueryContext(ctx, ws, since)
	if err != nil {
		return fmt.Errorf("stats runs: workspace %q: %w", ws, err)
	}
	defer rows.Close()
	first := true
	var (
		started, finished sql.NullInt64
		status            sql.RawBytes // no copy per row: mapped onto a constant
	)
	for rows.Next() {
		r := store.StatsRun{Workspace: ws}
		if err := rows.Scan(&r.ID, &started, &finished, &status); err != nil {
			return fmt.Errorf("stats runs: workspace %q: %w", ws, err)
		}
		r.StartedAt, r.FinishedAt, r.Status = fromNanos(started), fromNanos(finished), verdict(status)
		if first {
			first = false
			prior, err := statsContext(ctx, tx, ws, since)
			if err != nil {
				return fmt.Errorf("stats runs: workspace %q: context: %w", ws, err)
			}
			for _, c := range prior {
				if err := fn(c); err != nil {
					return err
				}
			}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("stats runs: workspace %q: %w", ws, err)
	}
	return nil
}

// statsContext finds a workspace's context runs before since (see
// store.StatsReader.StatsRuns), oldest first.
func statsContext(ctx context.Context, tx *sql.Tx, ws string, since int64) ([]store.StatsRun, error) {
	before := func(statuses, cond, order string, args ...any) (store.StatsRun, bool, error) {
		r, err := scanStatsRun(tx.QueryRowContext(ctx, `SELECT `+statsRunColumns+` FROM runs
WHERE workspace = ? AND started_at < ? AND finished_at IS NOT NULL AND status IN (`+statuses+`)`+cond+`
ORDER BY started_at `+order+` LIMIT 1`, append([]any{ws, since}, args...)...))
		if errors.Is(err, sql.ErrNoRows) {
			return r, false, nil
		}
		r.Before = true
		return r, err == nil, err
	}
	var found []store.StatsRun
	last, ok, err := before(verdictStatuses, "", "DESC")
	if err != nil || !ok {
		return nil, err
	}
	if last.Status == drift.StatusErrored {
		found = append(found, last)
	}
	lastOK, ok, err := before(successStatuses, "", "DESC")
	if err != nil {
		return nil, err
	}
	if ok {
		found = append(found, lastOK)
	}
	if ok && (lastOK.Status == drift.StatusDrift || lastOK.Status == drift.StatusForbidden) {
		start, _ := nanos(lastOK.StartedAt)
		quiet, hasQuiet, err := before(quietStatuses, ` AND started_at < ?`, "DESC", start.Int64)
		if err != nil {
			return nil, err
		}
		after := int64(math.MinInt64)
		if hasQuiet {
			found = append(found, quiet)
			q, _ := nanos(quiet.StartedAt)
			after = q.Int64
		}
		first, hasFirst, err := before(driftStatuses, ` AND started_at > ?`, "ASC", after)
		if err != nil {
			return nil, err
		}
		if hasFirst {
			found = append(found, first)
		}
	}
	slices.SortFunc(found, func(a, b store.StatsRun) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	return slices.CompactFunc(found, func(a, b store.StatsRun) bool { return a.ID == b.ID }), nil
}

// verdict is the drift.Status constant spelled s (the window query
// reads only these).
func verdict(s []byte) drift.Status {
	for _, v := range []drift.Status{drift.StatusClean, drift.StatusPending, drift.StatusValidation,
		drift.StatusDrift, drift.StatusForbidden, drift.StatusErrored} {
		if string(s) == string(v) {
			return v
		}
	}
	return drift.Status(s)
}

func scanStatsRun(sc scanner) (store.StatsRun, error) {
	var (
		r                 store.StatsRun
		started, finished sql.NullInt64
		status            string
	)
	if err := sc.Scan(&r.ID, &r.Workspace, &started, &finished, &status); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt, r.Status = fromNanos(started), fromNanos(finished), drift.Status(status)
	return r, nil
}

// DriftedTypes counts the resource types of the given runs' counted drift
// and forbidden findings, in SQL (findingTypes).
func (s *Store) DriftedTypes(ctx context.Context, runIDs []string) ([]store.TypeCount, error) {
	out, err := s.findingTypes(ctx, driftKinds, runIDs)
	if err != nil {
		return nil, fmt.Errorf("drifted types: %w", err)
	}
	return out, nil
}

// UnmanagedTypes counts the resource types of the given runs' counted
// unmanaged findings, in SQL (findingTypes).
func (s *Store) UnmanagedTypes(ctx context.Context, runIDs []string) ([]store.TypeCount, error) {
	out, err := s.findingTypes(ctx, unmanagedKinds, runIDs)
	if err != nil {
		return nil, fmt.Errorf("unmanaged types: %w", err)
	}
	return out, nil
}

// findingTypes counts the resource types of the given runs' counted
// findings of kinds (an SQL list), in SQL (the dialect's JSON functions
// over the runs' findings): the runs are looked up by primary key, so the
// cost follows len(runIDs), not the size of the history.
func (s *Store) findingTypes(ctx context.Context, kinds string, runIDs []string) ([]store.TypeCount, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	ids, err := json.Marshal(runIDs)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, s.d.findingTypes(kinds), string(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.TypeCount
	for rows.Next() {
		var c store.TypeCount
		if err := rows.Scan(&c.Type, &c.Runs, &c.Workspaces); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ScanFound counts the given runs' counted unmanaged and managed-twice
// findings, in SQL (the dialect's scanFound), each run looked up by
// primary key.
func (s *Store) ScanFound(ctx context.Context, runIDs []string) ([]store.FoundCount, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	unique := slices.Compact(slices.Sorted(slices.Values(runIDs)))
	ids, err := json.Marshal(unique)
	if err != nil {
		return nil, fmt.Errorf("scan found: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, s.d.scanFound, string(ids))
	if err != nil {
		return nil, fmt.Errorf("scan found: %w", err)
	}
	defer rows.Close()
	var out []store.FoundCount
	for rows.Next() {
		var c store.FoundCount
		if err := rows.Scan(&c.RunID, &c.Unmanaged, &c.ManagedTwice); err != nil {
			return nil, fmt.Errorf("scan found: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan found: %w", err)
	}
	return out, nil
}
