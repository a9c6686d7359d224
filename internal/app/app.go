package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/inventory"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Filter selects workspaces for an audit (pipeline.Filter).
type Filter = pipeline.Filter

// AuditOptions configures a one-shot audit.
type AuditOptions struct {
	Config      *config.Config
	Filter      Filter
	Concurrency int
	Logger      *slog.Logger
	// Progress receives the per-workspace progress display (stderr).
	Progress io.Writer
	// ProgressTTY enables the live-updating display.
	ProgressTTY bool
	// CacheDir, if set, keeps each workspace's initialised working
	// directory there between audits (runs skip init when nothing it
	// depends on changed); the runs' directories are made there too, so
	// that the kept state moves in and out by rename.
	CacheDir string
}

// Audit runs every selected workspace once and returns the report. It
// first expands the config's git discover: entries (checking their
// sources out), unless that was done already.
func Audit(ctx context.Context, o AuditOptions) (*report.Report, error) {
	if o.Config == nil {
		return nil, errors.New("driftwatch/app: AuditOptions.Config is required")
	}
	if o.Logger == nil {
		return nil, errors.New("driftwatch/app: AuditOptions.Logger is required")
	}
	if err := inventory.DiscoverGit(ctx, o.Config, inventory.DiscoverTimeout); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if ws, err := o.Filter.Select(o.Config); err != nil {
		return nil, err
	} else if len(ws) == 0 {
		return nil, errors.New("no workspace matches the filters")
	}
	iso, err := isolation(o.Config, o.Logger)
	if err != nil {
		return nil, err
	}
	targets, err := pipeline.Targets(o.Config, o.Filter, pipeline.Env{Jail: iso.Bwrap, JailNet: iso.Pasta, WorkDir: o.CacheDir})
	if err != nil {
		return nil, err
	}
	lr := local.New(o.Logger)
	lr.KeepWorkDirs = o.CacheDir != ""
	a := &pipeline.Auditor{Runner: lr, Logger: o.Logger}
	var obs pipeline.Observer
	if o.Progress != nil {
		p := report.NewProgress(o.Progress, o.ProgressTTY, len(targets))
		defer p.Close()
		obs = p
	}
	start := time.Now()
	results := a.RunAll(ctx, targets, o.Concurrency, obs)
	rep := report.New(start, time.Now(), results)
	// RunAll keeps target order, and so does New.
	for i, t := range targets {
		rep.Workspaces[i].SourceDir = t.SourceDir()
	}
	return rep, nil
}

// isolation resolves terraform.sandbox for local runs (sandbox.Resolve:
// it warns when runs are not isolated).
func isolation(cfg *config.Config, logger *slog.Logger) (sandbox.Isolation, error) {
	return sandbox.Resolve(cfg.Terraform.Sandbox, cfg.Terraform.SandboxNetwork, logger)
}

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
