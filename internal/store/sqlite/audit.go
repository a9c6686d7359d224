package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/store"
)

var (
	_ store.AuditStore  = (*Store)(nil)
	_ store.ReplayStore = (*Store)(nil)
)

// The audit log's caps, per kind of entry, enforced by RecordAudit as it
// inserts (and again by Prune): beyond its cap, a kind's oldest entries
// go. Anonymous entries (store.AuditEntry.Anonymous) have their own cap,
// so a flood of them only ever evicts older anonymous entries, never an
// identified caller's. Entries older than Prune's olderThan
// (store.max_age) go too, whatever their kind. The log of a busy
// driftwatch stays a few tens of MiB at most.
const (
	// keepAudit is how many entries of identified callers are kept.
	keepAudit = 100_000
	// keepAnonymous is how many anonymous entries are kept; each stands
	// for up to a minute of one peer's refused requests to one action.
	keepAnonymous = 10_000
)

// auditCap is the cap of the kind anon (0: identified, 1: anonymous).
func (s *Store) auditCap(anon int) int {
	if c := s.auditCaps[anon]; c > 0 {
		return c
	}
	if anon == 1 {
		return keepAnonymous
	}
	return keepAudit
}

const auditColumns = `seq, at, actor, method, roles, action, target, result, status, detail, source, count, anonymous, peer`

// RecordAudit appends e (store.AuditStore). Its ID is the store's; its
// Detail is cut to store.MaxAuditDetail bytes and its Actor, Target and
// Peer to store.MaxAuditName, at a character boundary. At and Action are
// required.
//
// An Anonymous e is aggregated: if its minute already has an entry of
// the same Peer, Action, Source, Result, Status and Detail, e's Count is
// added to that entry's; its Target and Roles are not kept (a refused
// caller chose them). A new entry beyond its kind's cap deletes the
// kind's oldest, in the same transaction.
func (s *Store) RecordAudit(ctx context.Context, e store.AuditEntry) (err error) {
	defer s.noteWrite(&err)
	switch {
	case e.At.IsZero():
		return errors.New("record audit entry: its time is required")
	case e.Action == "":
		return errors.New("record audit entry: its action is required")
	case e.Count < 0:
		return fmt.Errorf("record audit entry: negative count %d", e.Count)
	}
	at, err := nanos(e.At)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	roles := e.Roles
	if roles == nil || e.Anonymous {
		roles = []string{}
	}
	rs, err := json.Marshal(roles)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	count := max(e.Count, 1)
	var (
		anon   int
		minute sql.NullInt64
		peer   string
		target = capBytes(e.Target, store.MaxAuditName)
	)
	if e.Anonymous {
		anon, peer, target = 1, capBytes(e.Peer, store.MaxAuditName), ""
		if minute, err = nanos(e.At.Truncate(time.Minute)); err != nil {
			return fmt.Errorf("record audit entry: %w", err)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// The conflict target is the partial index of anonymous entries:
	// other entries (minute NULL) never conflict.
	var total int
	err = tx.QueryRowContext(ctx, `INSERT INTO audit_log (at, actor, method, roles, action, target, result, status, detail, source,
	count, anonymous, peer, minute)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (minute, peer, action, source, result, status, detail) WHERE anonymous = 1
DO UPDATE SET count = audit_log.count + excluded.count, at = CASE WHEN excluded.at < audit_log.at THEN excluded.at ELSE audit_log.at END
RETURNING count`,
		at.Int64, capBytes(e.Actor, store.MaxAuditName), e.Method, string(rs), e.Action,
		target, e.Result, e.Status, capBytes(e.Detail, store.MaxAuditDetail), e.Source,
		count, anon, peer, minute).Scan(&total)
	if err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	if total == count { // a new entry: an aggregated one's total is larger
		if err := s.capAudit(ctx, tx, anon); err != nil {
			return fmt.Errorf("record audit entry: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	return nil
}

// capAudit deletes the oldest entries of the kind anon beyond its cap.
// audit_counts (kept by triggers) says how many there are without
// counting them.
func (s *Store) capAudit(ctx context.Context, tx *sql.Tx, anon int) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT n FROM audit_counts WHERE anonymous = ?`, anon).Scan(&n); err != nil {
		return fmt.Errorf("count entries: %w", err)
	}
	over := n - s.auditCap(anon)
	if over <= 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `
DELETE FROM audit_log WHERE seq IN (SELECT seq FROM audit_log WHERE anonymous = ? ORDER BY seq LIMIT ?)`, anon, over); err != nil {
		return fmt.Errorf("cap: %w", err)
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
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Method, &roles, &e.Action, &e.Target, &e.Result, &e.Status, &e.Detail, &e.Source,
			&e.Count, &e.Anonymous, &e.Peer); err != nil {
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
// deletes the entries recorded before cutoff (if set) and, per kind,
// those beyond the newest keepAudit (identified callers') or
// keepAnonymous (anonymous). It returns how many it deleted.
func (s *Store) pruneAudit(ctx context.Context, tx *sql.Tx, cutoff sql.NullInt64) (int64, error) {
	res, err := tx.ExecContext(ctx, `
DELETE FROM audit_log
WHERE (CAST(?1 AS BIGINT) IS NOT NULL AND at < ?1)
OR (anonymous = 0 AND seq < (SELECT min(seq) FROM (SELECT seq FROM audit_log WHERE anonymous = 0 ORDER BY seq DESC LIMIT ?2) AS newest))
OR (anonymous = 1 AND seq < (SELECT min(seq) FROM (SELECT seq FROM audit_log WHERE anonymous = 1 ORDER BY seq DESC LIMIT ?3) AS newest))`,
		cutoff, s.auditCap(0), s.auditCap(1))
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("audit log: %w", err)
	}
	return n, nil
}

// RememberSignature records a Slack request's signature as seen until
// until (store.ReplayStore), reporting whether it was already; it
// forgets the signatures expired at now first, in the same transaction.
// Only signatures that verified are recorded, so the table holds at most
// the replay window's genuine Slack requests.
func (s *Store) RememberSignature(ctx context.Context, sig string, until, now time.Time) (seen bool, err error) {
	defer s.noteWrite(&err)
	u, err := nanos(until)
	if err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	n, err := nanos(now)
	if err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `DELETE FROM slack_replay WHERE expires_at <= ?`, n); err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO slack_replay (signature, expires_at) VALUES (?, ?)
ON CONFLICT (signature) DO NOTHING`, sig, u)
	if err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	added, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("remember signature: %w", err)
	}
	return added == 0, nil
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
