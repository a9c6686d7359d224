package pgtest_test

import (
	"database/sql"
	"net"
	"os"
	"strings"
	"testing"
	"time"

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

// StartTCP's cluster is reached over TCP at its address, where the
// session's TCP keepalives take (over the Unix socket they read 0), and
// it is stopped when its test ends: the port then refuses.
func TestStartTCPListensAndStopsWithTheTest(t *testing.T) {
	var addr string
	t.Run("serve", func(t *testing.T) {
		s := pgtest.StartTCP(t, "127.0.0.1/8")
		addr = s.Addr
		dsn := s.Database(t)
		require.Contains(t, dsn, "host=/")

		host, port, err := net.SplitHostPort(s.Addr)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host)
		var dbname string
		for _, kv := range strings.Fields(dsn) {
			if v, ok := strings.CutPrefix(kv, "dbname="); ok {
				dbname = v
			}
		}
		db, err := sql.Open("pgx", "host="+host+" port="+port+" user=postgres dbname="+dbname+" sslmode=disable")
		require.NoError(t, err)
		defer db.Close()
		conn, err := db.Conn(t.Context())
		require.NoError(t, err)
		defer conn.Close()
		var client sql.NullString
		require.NoError(t, conn.QueryRowContext(t.Context(), `SELECT inet_client_addr()::text`).Scan(&client))
		require.Equal(t, "127.0.0.1/32", client.String, "a TCP session")
		_, err = conn.ExecContext(t.Context(), `SET tcp_keepalives_idle = 10`)
		require.NoError(t, err)
		var idle string
		require.NoError(t, conn.QueryRowContext(t.Context(), `SHOW tcp_keepalives_idle`).Scan(&idle))
		require.Equal(t, "10", idle, "over a Unix socket it reads 0")
	})
	_, err := net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "the cluster stopped with its test")
}
