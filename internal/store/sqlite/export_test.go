package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
)

// Pragma reads a pragma through the store's writer connection, where the
// per-connection settings (synchronous, foreign_keys, busy_timeout) live.
func Pragma(ctx context.Context, s *Store, name string) (string, error) {
	var v string
	err := s.w.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, err
}

// SchemaVersion is the newest schema version this binary knows.
var SchemaVersion = len(migrations)

// ApplicationID marks driftwatch's database files.
const ApplicationID = applicationID

// OpenVersion opens path like Open, but migrates it no further than
// version: it makes files as an older driftwatch left them, through the same
// code path.
func OpenVersion(ctx context.Context, path string, logger *slog.Logger, version int) (*Store, error) {
	return openStore(ctx, path, logger, migrations[:version])
}

// SetKeepDelivered lowers how many delivered messages Prune keeps per
// notifier.
func SetKeepDelivered(s *Store, n int) { s.keepDelivered = n }

// DB is the store's writer connection, for tests that inspect rows the
// interface does not return. Do not hold a transaction on it.
func DB(s *Store) *sql.DB { return s.w }
