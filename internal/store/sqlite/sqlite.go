package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/driftwatch/driftwatch/internal/store"
)

// busyTimeoutMillis is how long a connection waits for another process's
// lock before failing with SQLITE_BUSY. Only another process can hold one
// (this process has a single writer connection), e.g. a second driftwatch
// started by mistake, or a person running sqlite3 against the file.
const busyTimeoutMillis = 10_000

// readConns caps the read-only pool. Reads are short; 4 is plenty for the
// HTTP API and the pipeline on a 2-core pod.
const readConns = 4

// sqliteMagic opens every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

var (
	_ store.Store       = (*Store)(nil)
	_ store.AlertStore  = (*Store)(nil)
	_ store.DaemonStore = (*Store)(nil)
)

// keepDelivered is how many delivered outbox messages Prune keeps per
// notifier, whatever their age.
const keepDelivered = 1000

// Store is a store.DaemonStore (runs, queued runs, workspace state,
// incidents and the outbox, run logs, remediations, silences,
// acceptances, group incidents) backed by one SQLite file or a
// PostgreSQL database. Its methods are safe for concurrent use.
type Store struct {
	path   string
	logger *slog.Logger
	// d is what differs between SQLite and PostgreSQL.
	d dialect
	// migrations is the package's migrations; tests open older schemas
	// with a prefix of it.
	migrations []string
	// keepDelivered is keepDelivered; tests lower it.
	keepDelivered int
	// auditCaps, if set, replace keepAudit and keepAnonymous (audit.go);
	// tests lower them.
	auditCaps [2]int
	// w is the only connection that writes: database/sql queues callers for
	// it, so transactions never contend inside this process.
	w *sql.DB
	// r is a pool of query_only connections.
	r *sql.DB
	// leadDB holds Lead's connection (PostgreSQL only); leadPID is that
	// connection's server process while it holds the lock (0: none), for
	// LeadHeld.
	leadDB  *sql.DB
	leadPID atomic.Int64

	// health is how writes fare (WriteHealth).
	health health

	closeOnce sync.Once
	closeErr  error
}

// Open opens the database at path, creating it and its directory if
// missing, and migrates its schema to the newest version this binary knows.
// It refuses, without writing to it, a file that is not a SQLite database,
// a SQLite database that is not driftwatch's, and one whose schema was
// written by a newer driftwatch; every error names the file.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	return openStore(ctx, path, logger, migrations)
}

// openStore is Open with the schema versions it may apply.
func openStore(ctx context.Context, path string, logger *slog.Logger, migrations []string) (*Store, error) {
	if logger == nil {
		return nil, errors.New("sqlite: logger is required")
	}
	if path == "" {
		return nil, errors.New("sqlite: path is required")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	created, err := prepareFile(abs)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	logger = logger.With("store", abs)
	if created {
		logger.Info("created store file")
	} else if fi, err := os.Stat(abs); err == nil && fi.Mode().Perm()&0o077 != 0 {
		// Not fixed silently: whoever made it readable may have a reason.
		logger.Warn("store file is readable by group or others", "mode", fi.Mode().Perm().String())
	}

	s := &Store{path: abs, logger: logger, d: sqliteDialect, migrations: migrations, keepDelivered: keepDelivered}
	if err := s.open(ctx); err != nil {
		_ = s.closeDBs() // the open error is the one that matters
		return nil, fmt.Errorf("store %s: %w", abs, explain(err))
	}
	return s, nil
}

// explain names the two SQLite failures a person opening a file can act on.
func explain(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("not a sqlite database: %w", err)
	case sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("database is damaged: %w", err)
	}
	return err
}

func (s *Store) open(ctx context.Context) error {
	// Every pragma here is per connection and writes nothing to the file,
	// so a file that turns out to be foreign is still untouched when we
	// give up. journal_mode=WAL is persistent and is set only after the
	// file has been checked.
	w, err := sql.Open("sqlite", dsn(s.path, url.Values{
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMillis),
			"foreign_keys(1)",
			// FULL, not NORMAL: in WAL mode NORMAL already survives kill -9
			// (a commit is in the OS page cache), but a node crash or power
			// loss can roll back the last commits, and Store promises a write
			// is durable when it returns. The cost is one fsync per commit, a
			// few per run.
			"synchronous(FULL)",
		},
		// A write transaction takes the write lock when it begins, so a
		// read-then-write (FinishRun) never fails half way with SQLITE_BUSY
		// because another process wrote in between.
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return err
	}
	s.w = w
	// One connection, kept open for the Store's lifetime: database/sql
	// queues every write for it. Its pragmas are in the DSN, so a
	// replacement connection (after a driver.ErrBadConn) gets them too.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	// Read-only checks first: nothing below may run on a file we refuse.
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := s.quickCheck(ctx); err != nil {
		return err
	}
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("set journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("set journal_mode: got %q, want wal", mode)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}

	r, err := sql.Open("sqlite", dsn(s.path, url.Values{
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMillis),
			"query_only(1)",
		},
	}))
	if err != nil {
		return err
	}
	s.r = r
	r.SetMaxOpenConns(readConns)
	r.SetMaxIdleConns(readConns)
	if err := r.PingContext(ctx); err != nil {
		return err
	}
	return nil
}

// check refuses a file this binary must not write to: another program's
// SQLite database, or a schema newer than the migrations it knows. It only
// reads.
func (s *Store) check(ctx context.Context) error {
	var version, appID, objects int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := s.w.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return fmt.Errorf("read application id: %w", err)
	}
	if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	switch {
	case appID == applicationID:
	case appID == 0 && version == 0 && objects == 0:
		// An empty database: ours to initialise.
	default:
		return fmt.Errorf("not a driftwatch database (application_id %#x, user_version %d, %d schema objects)", appID, version, objects)
	}
	if version > int64(len(s.migrations)) {
		return newerSchemaError(version, len(s.migrations))
	}
	return nil
}

func newerSchemaError(version int64, known int) error {
	return fmt.Errorf("schema version %d was created by a newer driftwatch; this binary knows versions up to %d", version, known)
}

// quickCheck catches a damaged file at startup rather than at the first
// query that touches the damaged page. It reads the whole file once, which
// is milliseconds at the sizes Prune keeps.
func (s *Store) quickCheck(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return fmt.Errorf("quick_check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("quick_check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, strings.ReplaceAll(line, "\n", "; "))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("quick_check: %w", err)
	}
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return fmt.Errorf("database is damaged: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Close closes the database. The last connection to close checkpoints the
// WAL into the main file.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.closeDBs() })
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.leadDB != nil {
		errs = append(errs, s.leadDB.Close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// dsn builds a modernc.org/sqlite data source name for an absolute path. The
// path goes in a file: URI, escaped, so that '?', '#' and '%' in a directory
// name cannot be mistaken for parameters; SQLite ignores the driver's
// underscore parameters.
func dsn(abs string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), OmitHost: true, RawQuery: params.Encode()}
	return u.String()
}

// prepareFile creates the directory (0700) and an empty file (0600) if
// missing; SQLite then creates the -wal and -shm files with the database
// file's mode. For an existing file it checks the SQLite header itself, so a
// file that is not a database is refused before SQLite has opened it.
func prepareFile(path string) (created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return false, err
		}
		// Make the new directory entry durable along with the first commit.
		if err := syncDir(dir); err != nil {
			return false, err
		}
		return true, nil
	case !errors.Is(err, fs.ErrExist):
		return false, err
	}

	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() == 0 {
		// An empty file is an empty database to SQLite (e.g. a crash right
		// after we created it above).
		return false, nil
	}
	f, err = os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, err
	}
	if !bytes.Equal(head, sqliteMagic) {
		return false, errors.New("not a sqlite database (no SQLite header)")
	}
	return false, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}
