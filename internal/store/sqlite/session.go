package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

var _ store.SessionStore = (*Store)(nil)

const sessionColumns = `id_hash, issuer, subject, name, email, user_groups, created_at, last_seen_at, expires_at`

// CreateSession stores s (store.SessionStore).
func (s *Store) CreateSession(ctx context.Context, ses store.Session) (err error) {
	defer s.noteWrite(&err)
	switch {
	case len(ses.IDHash) != sha256.Size:
		return fmt.Errorf("create session: its id hash must be %d bytes, not %d", sha256.Size, len(ses.IDHash))
	case ses.Subject == "":
		return errors.New("create session: its subject is required")
	case ses.CreatedAt.IsZero() || ses.LastSeenAt.IsZero() || ses.ExpiresAt.IsZero():
		return errors.New("create session: its creation, last use and expiry times are required")
	}
	var times [3]sql.NullInt64
	for i, t := range []time.Time{ses.CreatedAt, ses.LastSeenAt, ses.ExpiresAt} {
		if times[i], err = nanos(t); err != nil {
			return fmt.Errorf("create session: %w", err)
		}
	}
	groups := ses.Groups
	if groups == nil {
		groups = []string{}
	}
	gs, err := json.Marshal(groups)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ses.IDHash, ses.Issuer, ses.Subject, ses.Name, ses.Email, string(gs), times[0].Int64, times[1].Int64, times[2].Int64)
	if isDuplicate(err) {
		return errors.New("create session: a session with this id exists")
	}
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// Session returns the session of idHash (store.SessionStore).
func (s *Store) Session(ctx context.Context, idHash []byte) (store.Session, error) {
	ses, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id_hash = ?`, idHash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("session: %w", err)
	}
	return ses, nil
}

// TouchSession sets the session's last use (store.SessionStore).
func (s *Store) TouchSession(ctx context.Context, idHash []byte, at time.Time) (err error) {
	defer s.noteWrite(&err)
	n, err := nanos(at)
	if err != nil || !n.Valid {
		return fmt.Errorf("touch session: bad time %v: %w", at, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?`, n.Int64, idHash)
	if err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	if k, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("touch session: %w", err)
	} else if k == 0 {
		return fmt.Errorf("touch session: %w", store.ErrNotFound)
	}
	return nil
}

// DeleteSession deletes one session (store.SessionStore).
func (s *Store) DeleteSession(ctx context.Context, idHash []byte) (err error) {
	defer s.noteWrite(&err)
	if _, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, idHash); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// sessionWhere is the WHERE clause of f ("" for everything).
func sessionWhere(f store.SessionFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	if f.Subject != "" {
		where, args = append(where, "subject = ?"), append(args, f.Subject)
	}
	if f.Issuer != "" {
		where, args = append(where, "issuer = ?"), append(args, f.Issuer)
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}

// DeleteSessions deletes the sessions f selects (store.SessionStore).
func (s *Store) DeleteSessions(ctx context.Context, f store.SessionFilter) (_ int, err error) {
	defer s.noteWrite(&err)
	where, args := sessionWhere(f)
	res, err := s.w.ExecContext(ctx, `DELETE FROM sessions`+where, args...)
	if err != nil {
		return 0, fmt.Errorf("delete sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete sessions: %w", err)
	}
	return int(n), nil
}

// Sessions returns the sessions f selects, the most recently used first
// (store.SessionStore).
func (s *Store) Sessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	where, args := sessionWhere(f)
	rows, err := s.r.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions`+where+
		` ORDER BY last_seen_at DESC, created_at DESC, id_hash`, args...)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		ses, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		out = append(out, ses)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return out, nil
}

// PruneSessions deletes the expired and idle sessions
// (store.SessionStore).
func (s *Store) PruneSessions(ctx context.Context, now, idleBefore time.Time) (_ int, err error) {
	defer s.noteWrite(&err)
	n, err := nanos(now)
	if err != nil || !n.Valid {
		return 0, fmt.Errorf("prune sessions: bad time %v: %w", now, err)
	}
	idle, err := nanos(idleBefore)
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= ?1 OR (CAST(?2 AS BIGINT) IS NOT NULL AND last_seen_at < ?2)`, n.Int64, idle)
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	k, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	return int(k), nil
}

func scanSession(sc scanner) (store.Session, error) {
	var (
		ses                    store.Session
		groups                 string
		created, seen, expires int64
	)
	if err := sc.Scan(&ses.IDHash, &ses.Issuer, &ses.Subject, &ses.Name, &ses.Email, &groups, &created, &seen, &expires); err != nil {
		return store.Session{}, err
	}
	if err := json.Unmarshal([]byte(groups), &ses.Groups); err != nil {
		return store.Session{}, fmt.Errorf("decode groups: %w", err)
	}
	ses.CreatedAt = fromNanos(sql.NullInt64{Int64: created, Valid: true})
	ses.LastSeenAt = fromNanos(sql.NullInt64{Int64: seen, Valid: true})
	ses.ExpiresAt = fromNanos(sql.NullInt64{Int64: expires, Valid: true})
	return ses, nil
}
