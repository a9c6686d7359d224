package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// driftwatch migrate --to postgres copies the SQLite store the config's
// store.path names into the database of its store.dsn_file, prints the
// counts, and refuses to copy into a database that is no longer empty.
func TestMigrateToPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "driftwatch.db")
	src, err := sqlite.Open(t.Context(), dbPath, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, src.StartRun(t.Context(), store.Run{ID: "r1", Workspace: "net", StartedAt: time.Now()}))
	require.NoError(t, src.SaveRunLog(t.Context(), "r1", []byte("log")))
	require.NoError(t, src.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dsn"), []byte(dsn), 0o600))
	cfg := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("store:\n  driver: postgres\n  dsn_file: dsn\n  path: driftwatch.db\n"), 0o600))

	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"migrate", "--to", "postgres", "--config", cfg}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "runs             1\n")
	require.Contains(t, out.String(), "run_logs         1\n")
	require.Contains(t, out.String(), "copied 2 rows of 14 tables from "+dbPath+"; the counts match\n")

	dst, err := sqlite.OpenPostgres(t.Context(), dsn, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	r, err := dst.Run(t.Context(), "r1")
	require.NoError(t, err)
	require.Equal(t, "net", r.Workspace)
	require.NoError(t, dst.Close())

	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run([]string{"migrate", "--to", "postgres", "--config", cfg}, &out, &errb))
	require.Contains(t, errb.String(), "the destination is not empty")
	require.Empty(t, out.String())

	errb.Reset()
	require.Equal(t, 1, run([]string{"migrate", "--config", cfg}, &out, &errb))
	require.True(t, strings.HasPrefix(errb.String(), "driftwatch: usage: driftwatch migrate --to postgres"), errb.String())
}
