package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// copyTables are every table a store keeps, parents before the tables
// whose foreign keys point at them. audit_counts is not copied: the
// destination's triggers count the audit entries as they arrive.
// TestCopyTablesAreEveryTable keeps the list whole.
var copyTables = []string{
	"runs", "workspace_state", "run_logs",
	"incidents", "group_incidents", "outbox", "notifier_state",
	"remediations", "settings", "silences",
	"audit_log", "slack_replay", "sessions", "acceptances",
}

// TableCount is how many rows a table holds.
type TableCount struct {
	Table string
	Rows  int64
}

// CopyTo copies everything s holds (runs and their logs, workspace
// states, incidents and group incidents, the outbox, notifiers' state,
// remediations and the pause flag, silences, the audit log, Slack
// signatures, sessions, acceptances) into dst, which must be empty, in
// one transaction of dst's, then verifies that every table holds as many
// rows in both. Nothing may write to s meanwhile (its daemon stopped). It
// returns the counts copied.
func (s *Store) CopyTo(ctx context.Context, dst *Store) ([]TableCount, error) {
	fail := func(err error) ([]TableCount, error) {
		return nil, fmt.Errorf("copy store %s to %s: %w", s.path, dst.path, err)
	}
	tx, err := dst.w.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, t := range copyTables {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+t).Scan(&n); err != nil {
			return fail(err)
		}
		if n > 0 {
			return fail(fmt.Errorf("the destination is not empty: %s holds %d rows", t, n))
		}
	}
	var counts []TableCount
	for _, t := range copyTables {
		n, err := copyTable(ctx, s, tx, t)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", t, err))
		}
		counts = append(counts, TableCount{Table: t, Rows: n})
	}
	if dst.d.afterCopy != "" {
		if _, err := tx.ExecContext(ctx, dst.d.afterCopy); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	for _, c := range counts {
		for _, st := range []*Store{s, dst} {
			var n int64
			if err := st.r.QueryRowContext(ctx, `SELECT count(*) FROM `+c.Table).Scan(&n); err != nil {
				return fail(fmt.Errorf("verify %s: %w", c.Table, err))
			}
			if n != c.Rows {
				return fail(fmt.Errorf("verify %s: %s holds %d rows, %d were copied", c.Table, st.path, n, c.Rows))
			}
		}
	}
	return counts, nil
}

// copyTable inserts every row of src's table into tx's, column by column
// as src names them.
func copyTable(ctx context.Context, src *Store, tx *sql.Tx, table string) (int64, error) {
	rows, err := src.r.QueryContext(ctx, `SELECT * FROM `+table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = `"` + c + `"` // "trigger", "commit"
	}
	insert, err := tx.PrepareContext(ctx, `INSERT INTO `+table+` (`+strings.Join(quoted, ", ")+`) VALUES (`+
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")+`)`)
	if err != nil {
		return 0, err
	}
	defer insert.Close()
	var n int64
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if _, err := insert.ExecContext(ctx, vals...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}
