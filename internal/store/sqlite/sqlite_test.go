package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/store/storetest"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openStore opens path and closes it when the test ends.
func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// rawDB opens path with the driver alone, bypassing Store's checks.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func pragmaInt(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var v int64
	require.NoError(t, db.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v))
	return v
}

func TestConformance(t *testing.T) {
	storetest.Conformance(t, func(t *testing.T) store.Store {
		return openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	})
}

func TestStatsConformance(t *testing.T) {
	storetest.StatsConformance(t, func(t *testing.T) storetest.StatsStore {
		return openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	})
}

func TestAlertConformance(t *testing.T) {
	storetest.AlertConformance(t, func(t *testing.T) storetest.AlertStore {
		return openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	})
}

// The suites with restarts open the same file again after closing it.

func TestQueueConformance(t *testing.T) {
	storetest.QueueConformance(t, func(t *testing.T, dir string) storetest.QueueStore {
		return openStore(t, filepath.Join(dir, "driftwatch.db"))
	})
}

func TestLogConformance(t *testing.T) {
	storetest.LogConformance(t, func(t *testing.T, dir string) storetest.LogStore {
		return openStore(t, filepath.Join(dir, "driftwatch.db"))
	})
}

func TestRemediationConformance(t *testing.T) {
	storetest.RemediationConformance(t, func(t *testing.T, dir string) storetest.RemediationStore {
		return openStore(t, filepath.Join(dir, "driftwatch.db"))
	})
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	// Characters that mean something in a URI must reach the file system
	// as they are.
	dir := filepath.Join(base, "state dir?x=1#%41", "sub")
	path := filepath.Join(dir, "driftwatch.db")
	s := openStore(t, path)
	require.NoError(t, s.StartRun(ctx, store.Run{ID: "r1", Workspace: "net", StartedAt: time.Now()}))

	for _, p := range []string{filepath.Join(base, "state dir?x=1#%41"), dir} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.Equal(t, fs.FileMode(0o700), fi.Mode().Perm(), p)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), p)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 3, "only the database and its -wal and -shm, where they belong")

	for name, want := range map[string]string{
		"journal_mode": "wal",
		"synchronous":  "2", // FULL
		"foreign_keys": "1",
		"busy_timeout": "10000",
		"user_version": fmt.Sprint(sqlite.SchemaVersion),
	} {
		got, err := sqlite.Pragma(ctx, s, name)
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	s, err := sqlite.Open(ctx, path, testLogger(t))
	require.NoError(t, err)
	start := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.FixedZone("PST", -8*3600))
	r := store.Run{ID: "r1", Workspace: "net", Trigger: "once", StartedAt: start}
	require.NoError(t, s.StartRun(ctx, r))
	r.Status, r.FinishedAt = drift.StatusDrift, start.Add(90*time.Second+1)
	r.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: "a.b", Type: "a", Action: "update", Attributes: []string{"x"}}}
	_, after, err := s.FinishRun(ctx, r)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "close is idempotent")

	s = openStore(t, path)
	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	require.True(t, got.StartedAt.Equal(start))
	require.True(t, got.FinishedAt.Equal(r.FinishedAt))
	require.Equal(t, time.UTC, got.StartedAt.Location())
	require.Equal(t, r.Findings, got.Findings)
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	require.Equal(t, after, st)
}

func TestOpenArguments(t *testing.T) {
	ctx := t.Context()
	_, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "x.db"), nil)
	require.ErrorContains(t, err, "logger is required")
	_, err = sqlite.Open(ctx, "", testLogger(t))
	require.ErrorContains(t, err, "path is required")

	dir := t.TempDir()
	_, err = sqlite.Open(ctx, dir, testLogger(t))
	require.ErrorContains(t, err, dir)
	require.ErrorContains(t, err, "not a regular file")
}

// sqliteHeader is what a SQLite file starts with; the damaged-file cases
// keep it so that the refusal comes from SQLite, not from Open's own check.
const sqliteHeader = "SQLite format 3\x00"

// writeDriftwatchDB makes a real, multi-page driftwatch database at path.
func writeDriftwatchDB(t *testing.T, path string) {
	t.Helper()
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path, testLogger(t))
	require.NoError(t, err)
	for i := range 40 {
		r := store.Run{ID: fmt.Sprintf("run-%04d", i), Workspace: fmt.Sprintf("ws-%d", i%7), StartedAt: time.Unix(int64(i), 0)}
		require.NoError(t, s.StartRun(ctx, r))
		r.Status, r.FinishedAt, r.Error = drift.StatusErrored, time.Unix(int64(i+1), 0), fmt.Sprintf("%01000d", i)
		_, _, err := s.FinishRun(ctx, r)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
}

func TestOpenRefusesFilesItMustNotTouch(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"text file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("driftwatch:\n  workspaces: []\n"), 0o600))
		}, "not a sqlite database"},
		{"random bytes", func(t *testing.T, path string) {
			b := make([]byte, 8192)
			rnd := rand.New(rand.NewPCG(1, 2))
			for i := range b {
				b[i] = byte(rnd.Uint32())
			}
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}, "not a sqlite database"},
		{"shorter than the header", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("SQLite"), 0o600))
		}, "not a sqlite database"},
		{"header only", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte(sqliteHeader+"garbage after the magic"), 0o600))
		}, "not a sqlite database"},
		{"another program's database", func(t *testing.T, path string) {
			db := rawDB(t, path)
			_, err := db.ExecContext(t.Context(), `CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me'); PRAGMA user_version = 3`)
			require.NoError(t, err)
			require.NoError(t, db.Close())
		}, "not a driftwatch database"},
		{"another program's empty database", func(t *testing.T, path string) {
			db := rawDB(t, path)
			_, err := db.ExecContext(t.Context(), `PRAGMA application_id = 1234`)
			require.NoError(t, err)
			require.NoError(t, db.Close())
		}, "not a driftwatch database"},
		{"damaged driftwatch database", func(t *testing.T, path string) {
			writeDriftwatchDB(t, path)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Greater(t, len(b), 8*4096)
			for i := 3 * 4096; i < 5*4096; i++ {
				b[i] = 0xA5
			}
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}, "database is damaged"},
		{"truncated driftwatch database", func(t *testing.T, path string) {
			writeDriftwatchDB(t, path)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, fi.Size()/2))
		}, "database is damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "driftwatch.db")
			tc.make(t, path)
			want, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = sqlite.Open(t.Context(), path, testLogger(t))
			require.Error(t, err)
			t.Logf("error: %v", err)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tc.want)

			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, got, "the file was changed")
			_, err = os.Stat(path + "-wal")
			require.ErrorIs(t, err, fs.ErrNotExist, "a -wal file was left behind")
		})
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	writeDriftwatchDB(t, path)
	db := rawDB(t, path)
	newer := sqlite.SchemaVersion + 7
	_, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", newer))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	want, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = sqlite.Open(ctx, path, testLogger(t))
	require.Error(t, err)
	t.Logf("error: %v", err)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "created by a newer driftwatch")
	require.ErrorContains(t, err, fmt.Sprintf("schema version %d", newer))
	require.ErrorContains(t, err, fmt.Sprintf("up to %d", sqlite.SchemaVersion))

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, got, "the file was changed")

	db = rawDB(t, path)
	require.Equal(t, int64(newer), pragmaInt(t, db, "user_version"))
	require.Equal(t, int64(sqlite.ApplicationID), pragmaInt(t, db, "application_id"))
}

func TestOpenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	for range 3 {
		s, err := sqlite.Open(t.Context(), path, testLogger(t))
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	db := rawDB(t, path)
	require.Equal(t, int64(sqlite.SchemaVersion), pragmaInt(t, db, "user_version"))
	require.Equal(t, int64(sqlite.ApplicationID), pragmaInt(t, db, "application_id"))
	var tables []string
	rows, err := db.QueryContext(t.Context(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"acceptances", "audit_counts", "audit_log", "group_incidents", "incidents", "notifier_state", "outbox", "remediations", "run_logs", "runs",
		"sessions", "settings", "silences", "slack_replay", "workspace_state"}, tables)
}

func TestTimesOutOfRange(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	for _, at := range []time.Time{
		time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), // not the zero time
	} {
		err := s.StartRun(ctx, store.Run{ID: "r", Workspace: "net", StartedAt: at})
		require.ErrorContains(t, err, "out of range")
	}
}

func TestCanceledContext(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.StartRun(ctx, store.Run{ID: "r", Workspace: "net", StartedAt: time.Now()})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Runs(ctx, "net", 0)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Run(t.Context(), "r")
	require.ErrorIs(t, err, store.ErrNotFound)
}
