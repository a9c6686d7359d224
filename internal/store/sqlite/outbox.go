package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// DueMessages returns pending messages whose NextAttempt is at or before
// now and which are the oldest pending message of their (notifier,
// incident key) queue, oldest first, at most limit (0: all; now is
// required). A message waiting for its retry time therefore holds back the
// rest of its queue, and a dead one no longer does. With one deliverer per
// notifier, each incident's messages reach it in enqueue order; two
// deliverers of one notifier may both get the same head (MarkDelivered
// tolerates the second).
func (s *Store) DueMessages(ctx context.Context, now time.Time, limit int) ([]store.OutboxMessage, error) {
	if limit < 0 {
		return nil, fmt.Errorf("due messages: negative limit %d", limit)
	}
	at, err := nanos(now)
	if err != nil {
		return nil, fmt.Errorf("due messages: %w", err)
	}
	if !at.Valid {
		return nil, errors.New("due messages: time is required")
	}
	n := int64(limit)
	if limit == 0 {
		n = math.MaxInt64 // no limit, in both databases
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+outboxColumns+` FROM outbox AS o
WHERE `+pendingOutbox+` AND next_attempt <= ?1 AND held = 0
AND NOT EXISTS (
	SELECT 1 FROM outbox AS p
	WHERE p.notifier = o.notifier AND p.incident_key = o.incident_key AND p.seq < o.seq
	AND p.delivered_at IS NULL AND p.dead = 0
)
ORDER BY seq
LIMIT ?2`, at, n)
	if err != nil {
		return nil, fmt.Errorf("due messages: %w", err)
	}
	defer rows.Close()
	var out []store.OutboxMessage
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("due messages: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("due messages: %w", err)
	}
	return out, nil
}

func scanMessage(sc scanner) (store.OutboxMessage, error) {
	var (
		m             store.OutboxMessage
		created, next int64
		delivered     sql.NullInt64
		dead, held    int64
	)
	if err := sc.Scan(&m.ID, &m.Notifier, &m.IncidentKey, &m.Payload, &created, &m.Attempts, &next, &m.LastError, &delivered, &dead, &held); err != nil {
		return store.OutboxMessage{}, err
	}
	m.CreatedAt = fromNanos(sql.NullInt64{Int64: created, Valid: true})
	m.NextAttempt = fromNanos(sql.NullInt64{Int64: next, Valid: true})
	m.DeliveredAt = fromNanos(delivered)
	m.Dead = dead != 0
	m.Held = held != 0
	return m, nil
}

// messageStatus reads what MarkDelivered and MarkFailed need of a message
// inside their transaction; an unknown id is store.ErrNotFound.
func messageStatus(ctx context.Context, tx *sql.Tx, id string) (notifier, incidentKey string, delivered bool, err error) {
	var at sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT notifier, incident_key, delivered_at FROM outbox WHERE id = ?`, id).Scan(&notifier, &incidentKey, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, store.ErrNotFound
	}
	return notifier, incidentKey, at.Valid, err
}

// MarkDelivered records that message id was delivered at at and replaces
// its notifier's state for its incident with notifierState (nil or empty:
// deletes it), in one transaction. An unknown id (never enqueued, or pruned)
// is store.ErrNotFound. A message already delivered is left as it is,
// delivery time and notifier state included, and the call succeeds: a
// repeated MarkDelivered (a retry after a lost reply, or a second worker)
// must not put back an older state over a newer one.
func (s *Store) MarkDelivered(ctx context.Context, id string, at time.Time, notifierState []byte) (err error) {
	defer s.noteWrite(&err)
	if at.IsZero() {
		return fmt.Errorf("mark delivered %q: time is required", id)
	}
	when, err := nanos(at)
	if err != nil {
		return fmt.Errorf("mark delivered %q: %w", id, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mark delivered %q: %w", id, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	notifier, key, delivered, err := messageStatus(ctx, tx, id)
	if err != nil {
		return fmt.Errorf("mark delivered %q: %w", id, err)
	}
	if delivered {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE outbox SET delivered_at = ?, dead = 0 WHERE id = ?`, when, id); err != nil {
		return fmt.Errorf("mark delivered %q: %w", id, err)
	}
	if err := saveState(ctx, tx, notifier, key, notifierState, when); err != nil {
		return fmt.Errorf("mark delivered %q: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark delivered %q: %w", id, err)
	}
	return nil
}

// MarkFailed records a failed attempt of message id: Attempts+1 and
// LastError, then either dead (next is ignored) or a retry at next, which
// is required then. An unknown id is store.ErrNotFound. A delivered message
// is left as it is and the call succeeds (a late report of a duplicate
// attempt); a dead message stays dead, though the attempt is counted.
func (s *Store) MarkFailed(ctx context.Context, id string, lastError string, next time.Time, dead bool) (err error) {
	defer s.noteWrite(&err)
	if !dead && next.IsZero() {
		return fmt.Errorf("mark failed %q: next attempt time is required unless dead", id)
	}
	at, err := nanos(next)
	if err != nil {
		return fmt.Errorf("mark failed %q: next attempt: %w", id, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mark failed %q: %w", id, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	notifier, _, delivered, err := messageStatus(ctx, tx, id)
	if err != nil {
		return fmt.Errorf("mark failed %q: %w", id, err)
	}
	if delivered {
		return nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE outbox SET
	attempts = attempts + 1,
	last_error = ?1,
	next_attempt = CASE WHEN ?2 = 1 THEN next_attempt ELSE ?3 END,
	dead = CASE WHEN ?2 = 1 THEN 1 ELSE dead END,
	failed_seq = (SELECT coalesce(max(failed_seq), 0) + 1 FROM outbox WHERE notifier = ?4 AND failed_seq IS NOT NULL)
WHERE id = ?5`, lastError, boolInt(dead), at, notifier, id)
	if err != nil {
		return fmt.Errorf("mark failed %q: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark failed %q: %w", id, err)
	}
	return nil
}

// NotifierState returns what notifier stored for incidentKey, or nil if
// nothing (never stored, stored empty, or pruned with its incident).
func (s *Store) NotifierState(ctx context.Context, notifier, incidentKey string) ([]byte, error) {
	var state []byte
	err := s.r.QueryRowContext(ctx, `SELECT state FROM notifier_state WHERE notifier = ? AND incident_key = ?`, notifier, incidentKey).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("notifier state %s/%s: %w", notifier, incidentKey, err)
	}
	return state, nil
}

// SaveNotifierState replaces what notifier stores for incidentKey (nil or
// empty: deletes it), durably, at once. The row's updated_at, kept for a
// person reading the file, is the wall clock here (the interface passes no
// time) and the delivery time in MarkDelivered.
func (s *Store) SaveNotifierState(ctx context.Context, notifier, incidentKey string, state []byte) (err error) {
	defer s.noteWrite(&err)
	if notifier == "" || incidentKey == "" {
		return fmt.Errorf("save notifier state %s/%s: notifier and incident key are required", notifier, incidentKey)
	}
	now, err := nanos(time.Now())
	if err != nil {
		return fmt.Errorf("save notifier state %s/%s: %w", notifier, incidentKey, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save notifier state %s/%s: %w", notifier, incidentKey, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := saveState(ctx, tx, notifier, incidentKey, state, now); err != nil {
		return fmt.Errorf("save notifier state %s/%s: %w", notifier, incidentKey, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save notifier state %s/%s: %w", notifier, incidentKey, err)
	}
	return nil
}

func saveState(ctx context.Context, tx *sql.Tx, notifier, incidentKey string, state []byte, at sql.NullInt64) error {
	if len(state) == 0 {
		_, err := tx.ExecContext(ctx, `DELETE FROM notifier_state WHERE notifier = ? AND incident_key = ?`, notifier, incidentKey)
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO notifier_state (notifier, incident_key, state, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (notifier, incident_key) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
		notifier, incidentKey, state, at)
	return err
}

// OutboxStats returns, for every notifier with a message in the outbox
// (pending, dead or delivered and not yet pruned), its pending and dead
// counts, the CreatedAt of its oldest pending message (zero if none), and
// the LastError of its most recent failed attempt, whichever message that
// was and whether or not it was delivered since (so a recovered notifier
// shows Pending 0 with its last error). A notifier with no messages left is
// absent.
func (s *Store) OutboxStats(ctx context.Context) (map[string]store.OutboxCounts, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT o.notifier,
	count(*) FILTER (WHERE o.delivered_at IS NULL AND o.dead = 0 AND o.held = 0),
	count(*) FILTER (WHERE o.held = 1),
	count(*) FILTER (WHERE o.delivered_at IS NULL AND o.dead = 1),
	min(CASE WHEN o.delivered_at IS NULL AND o.dead = 0 AND o.held = 0 THEN o.created_at END),
	coalesce((SELECT f.last_error FROM outbox AS f
		WHERE f.notifier = o.notifier AND f.failed_seq IS NOT NULL
		ORDER BY f.failed_seq DESC LIMIT 1), '')
FROM outbox AS o
GROUP BY o.notifier`)
	if err != nil {
		return nil, fmt.Errorf("outbox stats: %w", err)
	}
	defer rows.Close()
	out := map[string]store.OutboxCounts{}
	for rows.Next() {
		var (
			notifier string
			c        store.OutboxCounts
			oldest   sql.NullInt64
		)
		if err := rows.Scan(&notifier, &c.Pending, &c.Held, &c.Dead, &oldest, &c.LastError); err != nil {
			return nil, fmt.Errorf("outbox stats: %w", err)
		}
		c.OldestPending = fromNanos(oldest)
		out[notifier] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox stats: %w", err)
	}
	return out, nil
}

// boolInt is b as the 0 or 1 the schema's flag columns hold: both
// databases compare it with an integer column.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
