package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

const silenceColumns = `id, workspace, labels, starts_at, ends_at, comment, created_by, created_at`

// AddSilence stores a new silence. ID, EndsAt after StartsAt, and either
// Workspace or Labels are required; an existing ID is an error.
func (s *Store) AddSilence(ctx context.Context, sl store.Silence) (err error) {
	defer s.noteWrite(&err)
	switch {
	case sl.ID == "":
		return errors.New("add silence: id is required")
	case sl.Workspace == "" && len(sl.Labels) == 0:
		return errors.New("add silence: a workspace or labels are required")
	case !sl.EndsAt.After(sl.StartsAt):
		return errors.New("add silence: it must end after it starts")
	}
	labels, err := json.Marshal(sl.Labels)
	if err != nil {
		return fmt.Errorf("add silence: %w", err)
	}
	var t [3]sql.NullInt64
	for i, v := range []time.Time{sl.StartsAt, sl.EndsAt, sl.CreatedAt} {
		if t[i], err = nanos(v); err != nil {
			return fmt.Errorf("add silence: %w", err)
		}
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO silences (`+silenceColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		sl.ID, sl.Workspace, string(labels), t[0], t[1], sl.Comment, sl.CreatedBy, t[2].Int64)
	if err != nil {
		return fmt.Errorf("add silence: %w", err)
	}
	return nil
}

// Silences lists the silences that end after now, soonest end first.
func (s *Store) Silences(ctx context.Context, now time.Time) ([]store.Silence, error) {
	at, err := nanos(now)
	if err != nil {
		return nil, fmt.Errorf("silences: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+silenceColumns+` FROM silences WHERE ends_at > ? ORDER BY ends_at, id`, at)
	if err != nil {
		return nil, fmt.Errorf("silences: %w", err)
	}
	defer rows.Close()
	var out []store.Silence
	for rows.Next() {
		sl, err := scanSilence(rows)
		if err != nil {
			return nil, fmt.Errorf("silences: %w", err)
		}
		out = append(out, sl)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("silences: %w", err)
	}
	return out, nil
}

// ExpireSilence ends silence id at at, unless it already ends earlier,
// and returns it as stored.
func (s *Store) ExpireSilence(ctx context.Context, id string, at time.Time) (_ store.Silence, err error) {
	defer s.noteWrite(&err)
	t, err := nanos(at)
	if err != nil {
		return store.Silence{}, fmt.Errorf("expire silence %s: %w", id, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.Silence{}, fmt.Errorf("expire silence %s: %w", id, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `UPDATE silences SET ends_at = CASE WHEN starts_at > ?1 THEN starts_at ELSE ?1 END WHERE id = ?2 AND ends_at > ?1`, t, id); err != nil {
		return store.Silence{}, fmt.Errorf("expire silence %s: %w", id, err)
	}
	sl, err := scanSilence(tx.QueryRowContext(ctx, `SELECT `+silenceColumns+` FROM silences WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Silence{}, store.ErrNotFound
	}
	if err != nil {
		return store.Silence{}, fmt.Errorf("expire silence %s: %w", id, err)
	}
	return sl, tx.Commit()
}

func scanSilence(sc scanner) (store.Silence, error) {
	var (
		sl                 store.Silence
		labels             string
		starts, ends, made int64
	)
	if err := sc.Scan(&sl.ID, &sl.Workspace, &labels, &starts, &ends, &sl.Comment, &sl.CreatedBy, &made); err != nil {
		return store.Silence{}, err
	}
	if err := json.Unmarshal([]byte(labels), &sl.Labels); err != nil {
		return store.Silence{}, err
	}
	sl.StartsAt = fromNanos(sql.NullInt64{Int64: starts, Valid: true})
	sl.EndsAt = fromNanos(sql.NullInt64{Int64: ends, Valid: true})
	sl.CreatedAt = fromNanos(sql.NullInt64{Int64: made, Valid: true})
	return sl, nil
}

// HeldWorkspaces lists the workspaces with held messages, by name.
func (s *Store) HeldWorkspaces(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT i.workspace FROM outbox AS o JOIN incidents AS i ON i.key = o.incident_key
WHERE o.held = 1 ORDER BY i.workspace`)
	if err != nil {
		return nil, fmt.Errorf("held workspaces: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ws string
		if err := rows.Scan(&ws); err != nil {
			return nil, fmt.Errorf("held workspaces: %w", err)
		}
		out = append(out, ws)
	}
	return out, rows.Err()
}

// ReleaseHeld replaces each (notifier, incident) queue of the workspace's
// held messages with collapse's message, in one transaction: the held rows
// are deleted, and the collapsed message (if any) is enqueued after every
// message in the outbox, due at now and not held.
func (s *Store) ReleaseHeld(ctx context.Context, workspace string, now time.Time, collapse func([]store.OutboxMessage) *store.OutboxMessage) (_ int, err error) {
	defer s.noteWrite(&err)
	wrap := func(err error) error { return fmt.Errorf("release held messages of %s: %w", workspace, err) }
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, wrap(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rows, err := tx.QueryContext(ctx, `SELECT o.id, o.notifier, o.incident_key, o.payload, o.created_at, o.attempts, o.next_attempt, o.last_error,
	o.delivered_at, o.dead, o.held FROM outbox AS o JOIN incidents AS i ON i.key = o.incident_key
WHERE o.held = 1 AND i.workspace = ? ORDER BY o.notifier, o.incident_key, o.seq`, workspace)
	if err != nil {
		return 0, wrap(err)
	}
	var queues [][]store.OutboxMessage
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			rows.Close()
			return 0, wrap(err)
		}
		if n := len(queues); n > 0 && queues[n-1][0].Notifier == m.Notifier && queues[n-1][0].IncidentKey == m.IncidentKey {
			queues[n-1] = append(queues[n-1], m)
		} else {
			queues = append(queues, []store.OutboxMessage{m})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrap(err)
	}
	released := 0
	for _, q := range queues {
		for _, m := range q {
			if _, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE id = ?`, m.ID); err != nil {
				return 0, wrap(err)
			}
		}
		c := collapse(q)
		if c == nil {
			continue
		}
		c.Notifier, c.IncidentKey, c.Held = q[0].Notifier, q[0].IncidentKey, false
		c.CreatedAt, c.NextAttempt = now, now
		if err := insertMessage(ctx, tx, *c); err != nil {
			return 0, wrap(err)
		}
		released++
	}
	if err := tx.Commit(); err != nil {
		return 0, wrap(err)
	}
	return released, nil
}
