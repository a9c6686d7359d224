package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// MigrateStore is `driftwatch migrate --to postgres`: it copies the SQLite
// store at cfg.Store.Path into the empty PostgreSQL database of
// cfg.Store.DSNFile (cfg's driver must be postgres) and verifies the
// counts (sqlite.CopyFileTo). It holds the SQLite store's lock
// meanwhile, so a daemon still running on the file is refused.
func MigrateStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) ([]sqlite.TableCount, error) {
	if cfg.Store.Driver != config.StorePostgres {
		return nil, errors.New("migrate --to postgres: set store.driver: postgres and store.dsn_file; store.path names the SQLite file to copy")
	}
	if _, err := os.Stat(cfg.Store.Path); err != nil {
		return nil, fmt.Errorf("migrate --to postgres: store.path: %w", err)
	}
	unlock, err := leader.ClaimStore(ctx, logger, cfg.Store.Path, cfg.Terraform.WorkDir, leader.StoreLockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return sqlite.CopyFileTo(ctx, cfg.Store.Path, cfg.Store.DSNFile, logger)
}
