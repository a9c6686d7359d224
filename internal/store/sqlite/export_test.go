package sqlite

import "context"

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
