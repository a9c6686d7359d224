package app

import (
	"context"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/inventory"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/pipeline/oneshot"
	"github.com/driftwatch/driftwatch/internal/report"
)

// Filter selects workspaces for an audit (pipeline.Filter).
type Filter = pipeline.Filter

// AuditOptions configures a one-shot audit (oneshot.Options).
type AuditOptions = oneshot.Options

// Audit runs every selected workspace once and returns the report
// (oneshot.Audit).
func Audit(ctx context.Context, o AuditOptions) (*report.Report, error) { return oneshot.Audit(ctx, o) }

// LoadConfig reads the config file at path and expands its discover:
// entries with a local source (inventory.Load); git ones wait for
// DiscoverGit.
func LoadConfig(path string) (*config.Config, error) { return inventory.Load(path) }

// DiscoverGit checks the sources of the config's git discover: entries
// out and adds their workspaces (inventory.DiscoverGit, unbounded: the
// inventory command).
func DiscoverGit(ctx context.Context, cfg *config.Config) error {
	return inventory.DiscoverGit(ctx, cfg, 0)
}

// Validate checks what `driftwatch validate` can check beyond the config
// file itself without running anything: targets and policy rules, and every
// notifier's constructor (secret files readable and well-formed).
func Validate(cfg *config.Config, logger *slog.Logger) error {
	if _, err := pipeline.Targets(cfg, Filter{}, pipeline.Env{}); err != nil {
		return err
	}
	_, err := notifiers.Build(cfg.NotifierSpecs(), logger)
	return err
}
