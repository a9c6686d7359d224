package app

import (
	"context"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// MigrateStore is `driftwatch migrate --to postgres`
// (sqlite.MigrateConfigured), holding the SQLite store's lock
// (leader.ClaimStore) while it copies.
func MigrateStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) ([]sqlite.TableCount, error) {
	claim := func(ctx context.Context) (func(), error) {
		return leader.ClaimStore(ctx, logger, cfg.Store.Path, cfg.Terraform.WorkDir, leader.StoreLockWait)
	}
	return sqlite.MigrateConfigured(ctx, cfg.Store.Driver, cfg.Store.Path, cfg.Store.DSNFile, claim, logger)
}
