package sqlite_test

import (
	"os"
	"sync"
	"testing"

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
