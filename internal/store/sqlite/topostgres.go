package sqlite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// MigrateConfigured is `driftwatch migrate --to postgres` on a config's
// store block: driver must be "postgres"; it copies the SQLite store at
// path into the empty PostgreSQL database of dsnFile and verifies the
// counts (CopyFileTo), holding the SQLite store's lock (claim) meanwhile,
// so that a daemon still running on the file is refused.
func MigrateConfigured(ctx context.Context, driver, path, dsnFile string, claim func(context.Context) (unlock func(), err error), logger *slog.Logger) ([]TableCount, error) {
	if driver != "postgres" {
		return nil, errors.New("migrate --to postgres: set store.driver: postgres and store.dsn_file; store.path names the SQLite file to copy")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("migrate --to postgres: store.path: %w", err)
	}
	unlock, err := claim(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return CopyFileTo(ctx, path, dsnFile, logger)
}
