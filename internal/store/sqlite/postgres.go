package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// writeLockKey is the PostgreSQL advisory lock every writing transaction
// takes first ("DrWt"): writes are serialised across every process on the
// database, as SQLite's one writer serialises them in a file, so that
// FinishRun's read-modify-write and the outbox's max(seq)+1 need no retry.
const writeLockKey = 0x44725774

// OpenPostgres opens the PostgreSQL database the DSN names (a URL or
// key=value pairs, as libpq takes) and migrates its schema to the newest
// version this binary knows, from the same migrations as a SQLite file.
// The DSN is a secret (it may hold a password): it is never logged, and no
// error repeats it. It refuses a database that holds tables but no
// driftwatch schema, and one whose schema a newer driftwatch wrote.
// Several processes may open the same database (replicas): their writes
// are serialised by an advisory lock.
func OpenPostgres(ctx context.Context, dsn string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		return nil, errors.New("postgres store: logger is required")
	}
	cfg, err := pgx.ParseConfig(strings.TrimSpace(dsn))
	if err != nil {
		// The parser's message may quote the DSN: say only that it is bad.
		return nil, errors.New("postgres store: the DSN does not parse (its text is not shown: it may hold a password)")
	}
	name := fmt.Sprintf("postgres %s/%s", cfg.Host, cfg.Database)
	password := cfg.Password
	s := &Store{path: name, logger: logger.With("store", name), d: postgresDialect, migrations: migrations, keepDelivered: keepDelivered}
	if err := s.openPostgres(ctx, cfg); err != nil {
		_ = s.closeDBs() // the open error is the one that matters
		return nil, redact(fmt.Errorf("store %s: %w", name, err), password)
	}
	return s, nil
}

// OpenPostgresFile is OpenPostgres with the DSN read from a file (a
// mounted Secret): store.dsn_file.
func OpenPostgresFile(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("postgres store: DSN file: %w", err)
	}
	return OpenPostgres(ctx, string(b), logger)
}

func (s *Store) openPostgres(ctx context.Context, cfg *pgx.ConnConfig) error {
	s.w = sql.OpenDB(pgConnector{Connector: stdlib.GetConnector(*cfg), lock: true})
	// One connection per process, as with SQLite: database/sql queues this
	// process's writes for it, and the advisory lock orders them with
	// other processes'.
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	if err := s.w.PingContext(ctx); err != nil {
		return err
	}
	if err := s.checkPostgres(ctx); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	rcfg := cfg.Copy()
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	s.leadDB = openLeadDB(pgConnector{Connector: stdlib.GetConnector(*cfg)})
	s.r = sql.OpenDB(pgConnector{Connector: stdlib.GetConnector(*rcfg)})
	s.r.SetMaxOpenConns(readConns)
	s.r.SetMaxIdleConns(readConns)
	return s.r.PingContext(ctx)
}

// checkPostgres refuses a database that holds someone else's tables: the
// schema search path's first schema must be empty or hold
// driftwatch_schema. It only reads.
func (s *Store) checkPostgres(ctx context.Context) error {
	var ours bool
	var tables int
	err := s.w.QueryRowContext(ctx, `SELECT
	EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'driftwatch_schema'),
	(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())`).Scan(&ours, &tables)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if !ours && tables > 0 {
		return fmt.Errorf("not a driftwatch database (%d tables, no driftwatch_schema)", tables)
	}
	return nil
}

// redact replaces the password in err's text, should a driver message
// ever quote it.
func redact(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return redactedError{msg: strings.ReplaceAll(err.Error(), password, "[redacted]"), err: err}
}

// redactedError is an error whose text had a secret taken out; it still
// matches what it wraps (errors.Is, As).
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// pgConnector makes pgx's database/sql connections take this package's
// SQL: ? placeholders become $n (rebind), and, with lock, a transaction
// takes the write lock as it begins (SQLite's BEGIN IMMEDIATE).
type pgConnector struct {
	driver.Connector
	lock bool
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: conn.(*stdlib.Conn), lock: c.lock}, nil
}

// pgConn is a pgx connection whose statements are rebound; everything
// else (sessions, pings, value checks) is pgx's own.
type pgConn struct {
	*stdlib.Conn
	lock bool
}

func (c *pgConn) Prepare(q string) (driver.Stmt, error) { return c.Conn.Prepare(rebind(q)) }

func (c *pgConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(q))
}

func (c *pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(q), flags(args))
}

func (c *pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(q), flags(args))
}

// flags turns bool arguments into the 0 or 1 the schema's flag columns
// hold (INTEGER CHECK (x IN (0, 1))), as SQLite's driver binds them.
func flags(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		if b, ok := a.Value.(bool); ok {
			args[i].Value = int64(boolInt(b))
		}
	}
	return args
}

func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	if err != nil || !c.lock || opts.ReadOnly {
		return tx, err
	}
	if _, err := c.Conn.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`,
		[]driver.NamedValue{{Ordinal: 1, Value: int64(writeLockKey)}}); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// OpenConfigured opens the store a config's store block names: driver
// "postgres" the database whose DSN is in dsnFile, "sqlite" (or "") the
// file at path.
func OpenConfigured(ctx context.Context, driver, path, dsnFile string, logger *slog.Logger) (*Store, error) {
	switch driver {
	case "", "sqlite":
		return Open(ctx, path, logger)
	case "postgres":
		return OpenPostgresFile(ctx, dsnFile, logger)
	}
	return nil, fmt.Errorf("store driver %q is not sqlite or postgres", driver)
}

// CopyFileTo copies the SQLite store at path into the empty PostgreSQL
// database of the DSN in dsnFile and verifies the counts (CopyTo). The
// caller holds the SQLite store's lock.
func CopyFileTo(ctx context.Context, path, dsnFile string, logger *slog.Logger) ([]TableCount, error) {
	src, err := Open(ctx, path, logger)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := OpenPostgresFile(ctx, dsnFile, logger)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	return src.CopyTo(ctx, dst)
}
