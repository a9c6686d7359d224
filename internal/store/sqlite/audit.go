package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/store"
)

var _ store.AuditStore = (*Store)(nil)

// keepAudit is how many audit entries Prune keeps, whatever their age:
// the log of a busy driftwatch stays a few tens of MiB at most. Entries
// older than Prune's olderThan (store.max_age) go too.
const keepAudit = 100_000

const auditColumns = `seq, at, actor, method, roles, action, target, result, status, detail, source`

// RecordAudit appends e (store.AuditStore). Its ID is the store's; its
// Detail is cut to store.MaxAuditDetail bytes and its Actor and Target to
// store.MaxAuditName, at a character boundary. At and Action are
// required.
func (s *Store) RecordAudit(ctx context.Context, e store.AuditEntry) (err error) {
	defer s.noteWrite(&err)
	switch {
	case e.At.IsZero():
		return errors.New("record audit entry: its time is required")
	case e.Action == "":
		return errors.New("record audit entry: its action is required")
	}
	at, err := nanos(e.At)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	roles := e.Roles
	if roles == nil {
		roles = []string{}
	}
	rs, err := json.Marshal(roles)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO audit_log (at, actor, method, roles, action, target, result, status, detail, source)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		at.Int64, capBytes(e.Actor, store.MaxAuditName), e.Method, string(rs), e.Action,
		capBytes(e.Target, store.MaxAuditName), e.Result, e.Status, capBytes(e.Detail, store.MaxAuditDetail), e.Source)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	return nil
}

// AuditEntries returns the entries f selects, newest first
// (store.AuditReader).
func (s *Store) AuditEntries(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("audit entries: negative limit %d", f.Limit)
	}
	var (
		where []string
		args  []any
	)
	if !f.Since.IsZero() {
		since, err := nanos(f.Since)
		if err != nil {
			return nil, fmt.Errorf("audit entries: %w", err)
		}
		where, args = append(where, "at >= ?"), append(args, since.Int64)
	}
	for _, c := range []struct{ col, v string }{{"actor", f.Actor}, {"action", f.Action}, {"target", f.Target}} {
		if c.v != "" {
			where, args = append(where, c.col+" = ?"), append(args, c.v)
		}
	}
	q := `SELECT ` + auditColumns + ` FROM audit_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY at DESC, seq DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit entries: %w", err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var (
			e     store.AuditEntry
			at    int64
			roles string
		)
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Method, &roles, &e.Action, &e.Target, &e.Result, &e.Status, &e.Detail, &e.Source); err != nil {
			return nil, fmt.Errorf("audit entries: %w", err)
		}
		e.At = fromNanos(sql.NullInt64{Int64: at, Valid: true})
		if err := json.Unmarshal([]byte(roles), &e.Roles); err != nil {
			return nil, fmt.Errorf("audit entry %d: decode roles: %w", e.ID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit entries: %w", err)
	}
	return out, nil
}

// pruneAudit is Prune's part for the audit log, in its transaction: it
// deletes the entries recorded before cutoff (if set) and those beyond
// the newest keepAudit. It returns how many it deleted.
func (s *Store) pruneAudit(ctx context.Context, tx *sql.Tx, cutoff sql.NullInt64) (int64, error) {
	res, err := tx.ExecContext(ctx, `
DELETE FROM audit_log
WHERE (?1 IS NOT NULL AND at < ?1)
OR seq < (SELECT min(seq) FROM (SELECT seq FROM audit_log ORDER BY seq DESC LIMIT ?2))`, cutoff, keepAudit)
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	return n, nil
}

// capBytes cuts s to at most n bytes, at a character boundary, marking a
// cut with "…".
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
