package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// leaderLockKey is the PostgreSQL session advisory lock the scheduling
// replica holds ("DwLd"), apart from writeLockKey.
const leaderLockKey = 0x44774c64

// leadCheckEvery is how often a leader checks that its lock's connection
// is alive: the longest two replicas may both believe they lead after the
// server dropped the first one's session.
const leadCheckEvery = 2 * time.Second

// leadKeepalives make the server end the leader's session, and so free
// the lock, about 25 s after the leader's machine stops answering (a node
// lost, a network cut): the operating system's defaults wait hours, since a
// vanished client sends no FIN. The leader pings every leadCheckEvery, so
// a live session is never idle long enough to be probed; the leader itself
// sees a cut within two checks and stops leading before the server frees
// the lock. Over a Unix socket they do nothing.
var leadKeepalives = []string{
	`SET tcp_keepalives_idle = 10`,
	`SET tcp_keepalives_interval = 5`,
	`SET tcp_keepalives_count = 3`,
}

// ErrLeadershipLost is the cause of Lead's context when the leadership
// lock's connection failed: the server may have released the lock to
// another replica.
var ErrLeadershipLost = errors.New("lost the PostgreSQL leadership lock (its connection failed)")

// Lead makes this process the one that schedules on the store. On
// PostgreSQL it waits, until ctx ends, for a session advisory lock held on
// a connection of its own (replicas sharing the database: one leads, the
// others wait; a leader's crash ends its session and frees the lock). The
// returned context ends when release is called or, with cause
// ErrLeadershipLost, when that connection fails a check; release unlocks
// and closes the connection. On SQLite it returns at once: the file lock
// (leader.ClaimStore) already decided.
func (s *Store) Lead(ctx context.Context) (leading context.Context, release func(), err error) {
	if s.leadDB == nil {
		leading, cancel := context.WithCancel(ctx)
		return leading, cancel, nil
	}
	conn, err := s.leadDB.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, q := range leadKeepalives {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			_ = conn.Close()
			return nil, nil, err
		}
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, int64(leaderLockKey)); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	var pid int64
	if err := conn.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // the lock goes with the session
		_ = conn.Close()
		return nil, nil, err
	}
	s.leadPID.Store(pid)
	leading, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leadCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-leading.Done():
				return
			case <-t.C:
			}
			check, stop := context.WithTimeout(leading, leadCheckEvery)
			err := conn.PingContext(check)
			stop()
			if err != nil && leading.Err() == nil {
				s.logger.Error("store: leadership lock lost", "err", err)
				cancel(ErrLeadershipLost)
				return
			}
		}
	}()
	return leading, func() {
		s.leadPID.Store(0)
		cancel(context.Canceled)
		<-done
		unlock, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		_, _ = conn.ExecContext(unlock, `SELECT pg_advisory_unlock(?)`, int64(leaderLockKey))
		// A lock its session still held goes with the connection.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
	}, nil
}

// LeadHeld checks at the server, through another connection, that the
// leadership lock Lead took is still held by Lead's session: it fails, at
// once, when the server dropped that session (a restart, a terminated
// backend), which Lead's own check notices only within leadCheckEvery, and
// by then another replica may lead. The outbox runs it before each
// attempt, so that two replicas never both send for long. It returns nil
// when this store holds no such lock (SQLite, Lead not called or
// released: leadership is then decided elsewhere) and an error wrapping
// ErrLeadershipLost when the lock is not the session's.
func (s *Store) LeadHeld(ctx context.Context) error {
	pid := s.leadPID.Load()
	if s.leadDB == nil || pid == 0 {
		return nil
	}
	var held bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
AND classid::bigint = 0 AND objid::bigint = ? AND objsubid = 1 AND pid = ?)`, int64(leaderLockKey), pid).Scan(&held)
	switch {
	case err != nil:
		return fmt.Errorf("check the leadership lock: %w", err)
	case !held:
		return fmt.Errorf("the leadership lock is no longer this replica's (server process %d): %w", pid, ErrLeadershipLost)
	}
	return nil
}

// openLeadDB is the pool of Lead's one connection (PostgreSQL only).
func openLeadDB(c pgConnector) *sql.DB {
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	return db
}
