package pgtest_test

import (
	"database/sql"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Each Database is its own, empty: a table made in one is absent from the
// next, and both are served by the one cluster.
func TestDatabaseIsFreshPerCall(t *testing.T) {
	first, second := pgtest.Database(t), pgtest.Database(t)
	require.NotEqual(t, first, second)

	a, err := sql.Open("pgx", first)
	require.NoError(t, err)
	defer a.Close()
	_, err = a.ExecContext(t.Context(), `CREATE TABLE marker (x int)`)
	require.NoError(t, err)

	b, err := sql.Open("pgx", second)
	require.NoError(t, err)
	defer b.Close()
	var n int
	require.NoError(t, b.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_tables WHERE tablename = 'marker'`).Scan(&n))
	require.Zero(t, n)

	var version string
	require.NoError(t, b.QueryRowContext(t.Context(), `SHOW server_version`).Scan(&version))
	t.Log("server", version, "in", pgtest.Dir(t))
}
