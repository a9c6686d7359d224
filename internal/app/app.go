package app

import (
	"context"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/inventory"
	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/pipeline/oneshot"
	"github.com/driftwatch/driftwatch/internal/remediation/acceptance"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/server/api"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// Filter selects workspaces for an audit (pipeline.Filter).
type Filter = pipeline.Filter

// AuditOptions configures a one-shot audit (oneshot.Options).
type AuditOptions = oneshot.Options

// Audit runs every selected workspace once and returns the report
// (oneshot.Audit), after the config's git discover: entries are expanded.
func Audit(ctx context.Context, o AuditOptions) (*report.Report, error) {
	o.Discover = inventory.DiscoverOnce
	return oneshot.Audit(ctx, o)
}

// Accept is `driftwatch accept`: one workspace's local request
// (oneshot.Request) handed to acceptance.Once, as the API shows it.
func Accept(ctx context.Context, cfg *config.Config, workspace string, addresses []string, propose, deletions bool, logger *slog.Logger) (apitypes.Acceptance, error) {
	req, err := oneshot.Request(ctx, cfg, inventory.DiscoverOnce, workspace, logger)
	if err != nil {
		return apitypes.Acceptance{}, err
	}
	a, err := acceptance.Once(ctx, cfg, req, addresses, acceptance.OnceOptions{Propose: propose, Deletions: deletions}, logger)
	return api.Acceptance(a), err
}

// Adopt is `driftwatch adopt` (oneshot.Adopt), after discover.
func Adopt(ctx context.Context, cfg *config.Config, scan string, findings []string, logger *slog.Logger) (drift.AdoptOutcome, error) {
	return oneshot.Adopt(ctx, cfg, inventory.DiscoverOnce, scan, findings, logger)
}

// MigrateStore is `driftwatch migrate --to postgres`
// (sqlite.MigrateConfigured), holding the SQLite store's lock
// (leader.ClaimStore) while it copies.
func MigrateStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) ([]sqlite.TableCount, error) {
	claim := func(ctx context.Context) (func(), error) {
		return leader.ClaimStore(ctx, logger, cfg.Store.Path, cfg.Terraform.WorkDir, leader.StoreLockWait)
	}
	return sqlite.MigrateConfigured(ctx, cfg.Store.Driver, cfg.Store.Path, cfg.Store.DSNFile, claim, logger)
}

// LoadConfig is inventory.Load: local discover: entries expanded.
func LoadConfig(path string) (*config.Config, error) { return inventory.Load(path) }

// DiscoverGit adds the workspaces of the config's git discover: entries
// (inventory.DiscoverGit, unbounded: the inventory command).
func DiscoverGit(ctx context.Context, cfg *config.Config) error {
	return inventory.DiscoverGit(ctx, cfg, 0)
}

// Validate is `driftwatch validate` beyond the config file, running no plan:
// the workspaces and scans (oneshot.Validate), every notifier's constructor.
func Validate(cfg *config.Config, logger *slog.Logger) error {
	if err := oneshot.Validate(context.Background(), cfg); err != nil {
		return err
	}
	_, err := notifiers.Build(cfg.NotifierSpecs(), logger)
	return err
}
