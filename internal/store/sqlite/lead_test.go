package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
)

// Two replicas on one PostgreSQL database: one leads, the other waits;
// it leads once the first releases, or once the first's session is
// killed (a crash), and then the first's context says it lost the lock.
func TestPostgresLead(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Database(t)
	a, b := openPostgres(t, dsn), openPostgres(t, dsn)

	leadingA, releaseA, err := a.Lead(ctx)
	require.NoError(t, err)
	type result struct {
		ctx     context.Context
		release func()
		err     error
	}
	second := make(chan result, 1)
	go func() {
		c, r, err := b.Lead(ctx)
		second <- result{c, r, err}
	}()
	select {
	case <-second:
		t.Fatal("a second replica led while the first held the lock")
	case <-time.After(500 * time.Millisecond):
	}
	releaseA()
	require.ErrorIs(t, context.Cause(leadingA), context.Canceled)
	var rb result
	select {
	case rb = <-second:
		require.NoError(t, rb.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not lead after the leader released")
	}

	// The leader's session dies (kill -9 of its process, as the server
	// sees it): the lock is free for the other, and the leader knows.
	third := make(chan result, 1)
	go func() {
		c, r, err := a.Lead(ctx)
		third <- result{c, r, err}
	}()
	admin := sqlite.DB(a)
	_, err = admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() AND objid = 1148669028`) // leaderLockKey "DwLd"
	require.NoError(t, err)
	select {
	case r := <-third:
		require.NoError(t, r.err)
		defer r.release()
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not lead after the leader's session died")
	}
	select {
	case <-rb.ctx.Done():
		require.ErrorIs(t, context.Cause(rb.ctx), sqlite.ErrLeadershipLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the killed leader did not notice")
	}
	rb.release()
}

// On SQLite the file lock decides: Lead returns at once.
func TestSQLiteLeadIsImmediate(t *testing.T) {
	s := openStore(t, t.TempDir()+"/driftwatch.db")
	leading, release, err := s.Lead(t.Context())
	require.NoError(t, err)
	require.NoError(t, leading.Err())
	require.NoError(t, s.LeadHeld(t.Context()), "no PostgreSQL lock to check")
	release()
	require.Error(t, leading.Err())
}

// LeadHeld tells a leader whose session the server dropped at once, not
// within leadCheckEvery, and tells the replica leading after it that it
// leads.
func TestPostgresLeadHeld(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Database(t)
	a, b := openPostgres(t, dsn), openPostgres(t, dsn)
	require.NoError(t, a.LeadHeld(ctx), "not leading: nothing to check")

	_, releaseA, err := a.Lead(ctx)
	require.NoError(t, err)
	require.NoError(t, a.LeadHeld(ctx))
	second := make(chan func(), 1)
	go func() {
		_, release, err := b.Lead(ctx)
		if err == nil {
			second <- release
		}
	}()
	_, err = sqlite.DB(b).ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() AND objid = 1148669028`) // leaderLockKey "DwLd"
	require.NoError(t, err)
	var releaseB func()
	select {
	case releaseB = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not lead after the leader's session died")
	}
	start := time.Now()
	err = a.LeadHeld(ctx)
	require.ErrorIs(t, err, sqlite.ErrLeadershipLost, "the dropped leader is told at once")
	require.Less(t, time.Since(start), time.Second)
	require.NoError(t, b.LeadHeld(ctx))
	releaseA()
	require.NoError(t, a.LeadHeld(ctx), "released: nothing to check")
	releaseB()
	require.NoError(t, b.LeadHeld(ctx))
}
