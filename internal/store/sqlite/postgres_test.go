package sqlite_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/store/storetest"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openPostgres opens a store on dsn and closes it when the test ends.
func openPostgres(t *testing.T, dsn string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.OpenPostgres(t.Context(), dsn, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// pgByDir gives the suites that restart a store (the same dir again) the
// same database, and each new dir a fresh one.
func pgByDir() storetest.Opener[*sqlite.Store] {
	var mu sync.Mutex
	dbs := map[string]string{}
	return func(t *testing.T, dir string) *sqlite.Store {
		mu.Lock()
		defer mu.Unlock()
		dsn, ok := dbs[dir]
		if !ok {
			dsn = pgtest.Database(t)
			dbs[dir] = dsn
		}
		return openPostgres(t, dsn)
	}
}

func TestPostgresConformance(t *testing.T) {
	storetest.Conformance(t, func(t *testing.T) store.Store { return openPostgres(t, pgtest.Database(t)) })
}

func TestPostgresStatsConformance(t *testing.T) {
	storetest.StatsConformance(t, func(t *testing.T) storetest.StatsStore { return openPostgres(t, pgtest.Database(t)) })
}

func TestPostgresAlertConformance(t *testing.T) {
	storetest.AlertConformance(t, func(t *testing.T) storetest.AlertStore { return openPostgres(t, pgtest.Database(t)) })
}

func TestPostgresQueueConformance(t *testing.T) {
	open := pgByDir()
	storetest.QueueConformance(t, func(t *testing.T, dir string) storetest.QueueStore { return open(t, dir) })
}

func TestPostgresLogConformance(t *testing.T) {
	open := pgByDir()
	storetest.LogConformance(t, func(t *testing.T, dir string) storetest.LogStore { return open(t, dir) })
}

func TestPostgresRemediationConformance(t *testing.T) {
	open := pgByDir()
	storetest.RemediationConformance(t, func(t *testing.T, dir string) storetest.RemediationStore { return open(t, dir) })
}

func TestPostgresSessionConformance(t *testing.T) {
	open := pgByDir()
	storetest.SessionConformance(t, func(t *testing.T, dir string) storetest.SessionStore { return open(t, dir) })
}

// The DSN is a secret: a canary password in it appears in no log line
// and no error, whether the store opens, cannot connect, or cannot parse
// the DSN.
func TestPostgresDSNIsNeverShown(t *testing.T) {
	const canary = "canary-Pa55-7f3a9c"
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	file := filepath.Join(dir, "dsn")

	// The test cluster trusts local connections: the password is sent and ignored.
	require.NoError(t, os.WriteFile(file, []byte(pgtest.Database(t)+" password="+canary+"\n"), 0o600))
	s, err := sqlite.OpenConfigured(t.Context(), "postgres", "", file, logger)
	require.NoError(t, err)
	require.NoError(t, s.StartRun(t.Context(), store.Run{ID: "r1", Workspace: "net", StartedAt: time.Now()}))
	require.NoError(t, s.Close())
	require.Contains(t, logs.String(), "applied schema migration", "the store logs")

	for name, dsn := range map[string]string{
		"no server":    "host=" + filepath.Join(dir, "nowhere") + " user=postgres dbname=x password=" + canary + " connect_timeout=2",
		"url":          "postgres://postgres:" + canary + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=2",
		"bad dsn":      "host=x password=" + canary + " sslmode=bogus",
		"unterminated": "host=x password='" + canary,
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(file, []byte(dsn), 0o600))
			_, err := sqlite.OpenConfigured(t.Context(), "postgres", "", file, logger)
			require.Error(t, err)
			t.Log(err)
			require.NotContains(t, err.Error(), canary)
		})
	}
	require.NotContains(t, logs.String(), canary)
}

func TestPostgresAcceptanceConformance(t *testing.T) {
	open := pgByDir()
	storetest.AcceptanceConformance(t, func(t *testing.T, dir string) storetest.AcceptanceStore { return open(t, dir) })
}

func TestPostgresGroupConformance(t *testing.T) {
	open := pgByDir()
	storetest.GroupConformance(t, func(t *testing.T, dir string) storetest.GroupStore { return open(t, dir) })
}
