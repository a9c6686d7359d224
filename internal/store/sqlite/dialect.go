package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is what differs between the two databases this package's one
// body of SQL runs on (docs/architecture/store.md). Everything else, every
// query and every migration, is written once, in the SQL both accept:
// ? placeholders (numbered ?N where one is used twice), ON CONFLICT ... DO
// UPDATE upserts, count(*) FILTER, CASE instead of the two-argument
// min/max. The placeholders are rewritten for PostgreSQL by its driver
// wrapper (pgConn), not here.
type dialect struct {
	name string
	// schema is a migration (written for SQLite) as this database runs it.
	schema func(migration string) string
	// version reads the schema version inside the migration's transaction;
	// setVersion records the next one in it.
	version    func(ctx context.Context, tx *sql.Tx) (int64, error)
	setVersion func(ctx context.Context, tx *sql.Tx, v int64) error
	// findingTypes is the query of DriftedTypes and UnmanagedTypes (JSON
	// functions are not standard SQL) over the finding kinds given as an
	// SQL list: its one argument is the run ids as a JSON array.
	findingTypes func(kinds string) string
	// scanFound is ScanFound's query; its one argument is the run ids (no
	// two alike) as a JSON array.
	scanFound string
	// afterCopy, if set, runs at the end of CopyTo's transaction: rows
	// copied with their ids must not be handed out again.
	afterCopy string
}

var sqliteDialect = dialect{
	name:   "sqlite",
	schema: func(m string) string { return m },
	version: func(ctx context.Context, tx *sql.Tx) (int64, error) {
		var v int64
		err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		return v, err
	},
	setVersion: func(ctx context.Context, tx *sql.Tx, v int64) error {
		// PRAGMA takes no bind parameters; v is an integer we computed.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	},
	findingTypes: func(kinds string) string {
		return `SELECT json_extract(f.value, '$.type') AS resource_type, COUNT(DISTINCT r.id), COUNT(DISTINCT r.workspace)
FROM json_each(?) AS ids CROSS JOIN runs AS r ON r.id = ids.value CROSS JOIN json_each(r.findings) AS f
WHERE json_extract(f.value, '$.kind') IN (` + kinds + `)
	AND coalesce(json_extract(f.value, '$.ignored'), 0) = 0
	AND coalesce(json_extract(f.value, '$.type'), '') <> ''
GROUP BY resource_type`
	},
	scanFound: `SELECT r.id,
	count(*) FILTER (WHERE json_extract(f.value, '$.kind') = 'unmanaged'),
	count(*) FILTER (WHERE json_extract(f.value, '$.kind') = 'managed_twice')
FROM json_each(?) AS ids CROSS JOIN runs AS r ON r.id = ids.value CROSS JOIN json_each(r.findings) AS f
WHERE json_extract(f.value, '$.kind') IN (` + scanKinds + `)
	AND coalesce(json_extract(f.value, '$.ignored'), 0) = 0
GROUP BY r.id`,
}

var postgresDialect = dialect{
	name:   "postgres",
	schema: pgSchema,
	version: func(ctx context.Context, tx *sql.Tx) (int64, error) {
		// The table is made in the first migration's transaction, under
		// the write lock every writing transaction takes (pgConn.BeginTx):
		// two replicas starting at once apply each migration once.
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS driftwatch_schema (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	version BIGINT NOT NULL
)`); err != nil {
			return 0, err
		}
		var v int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM driftwatch_schema WHERE id = 1`).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return v, err
	},
	setVersion: func(ctx context.Context, tx *sql.Tx, v int64) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO driftwatch_schema (id, version) VALUES (1, ?)
ON CONFLICT (id) DO UPDATE SET version = excluded.version`, v)
		return err
	},
	findingTypes: func(kinds string) string {
		return `SELECT f.value->>'type' AS resource_type, COUNT(DISTINCT r.id), COUNT(DISTINCT r.workspace)
FROM jsonb_array_elements_text(?::jsonb) AS ids(id) JOIN runs AS r ON r.id = ids.id
	CROSS JOIN LATERAL jsonb_array_elements(` + pgFindings + `) AS f(value)
WHERE f.value->>'kind' IN (` + kinds + `)
	AND NOT coalesce((f.value->>'ignored')::boolean, false)
	AND coalesce(f.value->>'type', '') <> ''
GROUP BY resource_type`
	},
	scanFound: `SELECT r.id,
	count(*) FILTER (WHERE f.value->>'kind' = 'unmanaged'),
	count(*) FILTER (WHERE f.value->>'kind' = 'managed_twice')
FROM jsonb_array_elements_text(?::jsonb) AS ids(id) JOIN runs AS r ON r.id = ids.id
	CROSS JOIN LATERAL jsonb_array_elements(` + pgFindings + `) AS f(value)
WHERE f.value->>'kind' IN (` + scanKinds + `)
	AND NOT coalesce((f.value->>'ignored')::boolean, false)
GROUP BY r.id`,
	afterCopy: `SELECT setval(pg_get_serial_sequence('audit_log', 'seq'), coalesce(max(seq), 0) + 1, false) FROM audit_log`,
}

// pgFindings is a run's findings as a JSON array, or NULL (no elements)
// where they are JSON null (a run without findings): unlike SQLite's
// json_each, jsonb_array_elements refuses a scalar.
const pgFindings = `CASE WHEN jsonb_typeof(r.findings::jsonb) = 'array' THEN r.findings::jsonb END`

// pgRewrites turn a migration written for SQLite into PostgreSQL, in
// order. TestPostgresSchema checks that no SQLite-only word is left.
var pgRewrites = []struct {
	re   *regexp.Regexp
	with string
}{
	// The application id marks a SQLite file; a database has driftwatch_schema.
	{regexp.MustCompile(`(?m)^PRAGMA [^;]*;\n?`), ""},
	// Column types are checked by PostgreSQL anyway.
	{regexp.MustCompile(`\)\s*STRICT(, WITHOUT ROWID)?;`), ");"},
	// SQLite's INTEGER PRIMARY KEY is the rowid: assigned when not given.
	{regexp.MustCompile(`\bINTEGER PRIMARY KEY\b`), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"},
	// Times are unix nanoseconds: 64 bits.
	{regexp.MustCompile(`\bINTEGER\b`), "BIGINT"},
	{regexp.MustCompile(`\bBLOB\b`), "BYTEA"},
	// A cast that fails refuses the row, as json_valid's CHECK does.
	{regexp.MustCompile(`json_valid\((\w+)\)`), "(${1}::jsonb IS NOT NULL)"},
	// A trigger's body is a function in PostgreSQL.
	{regexp.MustCompile(`(?s)CREATE TRIGGER (\w+) (AFTER \w+ ON \w+) BEGIN\n(.*?)\nEND;`),
		"CREATE FUNCTION ${1}() RETURNS trigger LANGUAGE plpgsql AS $$$$ BEGIN\n${3}\n\tRETURN NULL;\nEND $$$$;\n" +
			"CREATE TRIGGER ${1} ${2} FOR EACH ROW EXECUTE FUNCTION ${1}();"},
}

// pgSchema is migration m in PostgreSQL's words.
func pgSchema(m string) string {
	for _, r := range pgRewrites {
		m = r.re.ReplaceAllString(m, r.with)
	}
	return m
}

// rebind turns q's ? and ?N placeholders into PostgreSQL's $n, leaving
// quoted strings, quoted identifiers and -- comments alone.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(q[i+1:], c)
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+2])
			i += j + 1
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
				i = j - 1
			} else {
				n++
				fmt.Fprintf(&b, "$%d", n)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isDuplicate is whether err is a primary key or unique constraint
// refusing a row, in either database.
func isDuplicate(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}

// isStorageError is whether err is the database failing to store rather
// than refusing what was written: for SQLite the file (full, read-only,
// failing, locked by another process), for PostgreSQL the server (out of
// disk or memory, shutting down, read-only, unreachable).
func isStorageError(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOMEM,
			sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "08", "53", "57", "58", "XX": // connection, resources, operator intervention, system, internal
			return true
		}
		return pe.Code == "25006" // read_only_sql_transaction: a standby
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.Is(err, driver.ErrBadConn) || pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}
