package leader

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
)

// storeConfig is a config whose store is driver's, at dir/dw.db.
func storeConfig(dir, driver string) *config.Config {
	cfg := &config.Config{}
	cfg.Store.Driver = driver
	cfg.Store.Path = filepath.Join(dir, "dw.db")
	cfg.Terraform.WorkDir = filepath.Join(dir, "runs")
	return cfg
}

// locked is whether cfg's store lock is held by someone else.
func locked(t *testing.T, cfg *config.Config) bool {
	t.Helper()
	unlock, err := lockStore(t.Context(), cfg.Store.Path, 50*time.Millisecond)
	if err != nil {
		require.ErrorIs(t, err, ErrStoreInUse)
		return true
	}
	unlock()
	return false
}

// A SQLite daemon without leader election holds its store's lock from the
// start; an electing one takes it when it leads, re-reading the config;
// on PostgreSQL no file lock is taken.
func TestStoreClaims(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		driver            string
		electing          bool
		atStart, whenLead bool
	}{
		{config.StoreSQLite, false, true, false},
		{config.StoreSQLite, true, false, true},
		{config.StorePostgres, false, false, false},
		{config.StorePostgres, true, false, false},
	} {
		cfg := storeConfig(t.TempDir(), tc.driver)
		unlock, err := ClaimAtStart(t.Context(), log, cfg, tc.electing, StoreLockWait)
		require.NoError(t, err)
		require.Equal(t, tc.atStart, locked(t, cfg), "%+v: at start", tc)
		unlock()
		require.False(t, locked(t, cfg), "%+v: unlocked", tc)

		claim := ClaimWhenLeading(log, tc.electing, func() *config.Config { return cfg })
		require.Equal(t, tc.whenLead, claim != nil, "%+v: when leading", tc)
		if claim != nil {
			unlock, err := claim(t.Context())
			require.NoError(t, err)
			require.True(t, locked(t, cfg), "%+v: when leading", tc)
			unlock()
		}
	}
}

// fakeLock is a leadership lock whose leading context ends with cause
// when lose is called.
type fakeLock struct {
	err      error
	cause    error
	lose     func()
	released bool
}

func (f *fakeLock) Lead(ctx context.Context) (context.Context, func(), error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	leading, cancel := context.WithCancelCause(ctx)
	f.lose = func() { cancel(f.cause) }
	return leading, func() { f.released = true; cancel(nil) }, nil
}

var errLost = errors.New("lost the lock")

// HoldLock leads while the lock is held: a lost lock is returned (the
// process ends), an ended ctx is not, lead's error is, and the lock is
// released after lead returned.
func TestHoldLock(t *testing.T) {
	lead := func(ctx context.Context) error { <-ctx.Done(); return nil }

	lost := &fakeLock{cause: errLost}
	err := HoldLock(t.Context(), lost, errLost, func(ctx context.Context) error { lost.lose(); return lead(ctx) })
	require.ErrorIs(t, err, errLost)
	require.True(t, lost.released)

	ended := &fakeLock{}
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, HoldLock(ctx, ended, errLost, func(ctx context.Context) error { cancel(); return lead(ctx) }))
	require.True(t, ended.released)

	failed := &fakeLock{}
	boom := errors.New("recover failed")
	require.ErrorIs(t, HoldLock(t.Context(), failed, errLost, func(context.Context) error { return boom }), boom)
	require.True(t, failed.released)

	refused := &fakeLock{err: boom}
	require.ErrorIs(t, HoldLock(t.Context(), refused, errLost, func(context.Context) error { t.Fatal("led without the lock"); return nil }), boom)
}
