package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// MigrateConfigured copies only to a postgres store block, from a SQLite
// file that exists, under the store's lock: a refused lock copies nothing.
func TestMigrateConfiguredRefuses(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	path := filepath.Join(dir, "dw.db")
	claimed := 0
	busy := errors.New("in use by another driftwatch daemon")
	claim := func(context.Context) (func(), error) { claimed++; return nil, busy }

	_, err := MigrateConfigured(t.Context(), "sqlite", path, "dsn", claim, log)
	require.ErrorContains(t, err, "set store.driver: postgres")
	_, err = MigrateConfigured(t.Context(), "postgres", path, "dsn", claim, log)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "migrate --to postgres: store.path: ")
	require.Zero(t, claimed, "no lock before the checks pass")

	s, err := Open(t.Context(), path, log)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = MigrateConfigured(t.Context(), "postgres", path, filepath.Join(dir, "missing-dsn"), claim, log)
	require.ErrorIs(t, err, busy)
	require.Equal(t, 1, claimed)
}
