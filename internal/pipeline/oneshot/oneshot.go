package oneshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident/group"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Options configures a one-shot audit.
type Options struct {
	Config      *config.Config
	Filter      pipeline.Filter
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
	// Discover, if set, first expands the config's git discover: entries,
	// checking their sources out (app hands inventory.DiscoverOnce).
	Discover func(context.Context, *config.Config) error
}

// Audit runs every selected workspace once and returns the report, after
// Discover; with grouping.enabled, with the groups of its findings that
// share a cause (bounded by grouping.window and min_members).
func Audit(ctx context.Context, o Options) (*report.Report, error) {
	if o.Config == nil {
		return nil, errors.New("driftwatch/app: AuditOptions.Config is required")
	}
	if o.Logger == nil {
		return nil, errors.New("driftwatch/app: AuditOptions.Logger is required")
	}
	if o.Discover != nil {
		if err := o.Discover(ctx, o.Config); err != nil {
			return nil, err
		}
	}
	ws, err := o.Filter.Select(o.Config)
	if err != nil {
		return nil, err
	} else if len(ws) == 0 {
		return nil, errors.New("no workspace matches the filters")
	}
	targets, err := localTargets(o.Config, withFleet(o.Config, ws, o.Filter), o.CacheDir, o.Logger)
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
	groupFindings(rep, o.Config)
	return rep, nil
}

// withFleet is f, or, when it selects a scan (selected), f widened to
// every workspace: a scan compares what it lists with every workspace's
// state, which this audit reads by checking them all.
func withFleet(cfg *config.Config, selected []config.Workspace, f pipeline.Filter) pipeline.Filter {
	if !slices.ContainsFunc(selected, func(w config.Workspace) bool { return w.Scan != nil }) {
		return f
	}
	var names []string
	for _, w := range cfg.Workspaces {
		if w.Scan == nil || slices.ContainsFunc(selected, func(s config.Workspace) bool { return s.Name == w.Name }) {
			names = append(names, w.Name)
		}
	}
	return pipeline.Filter{Names: names}
}

// groupFindings sets rep's groups when cfg turns grouping on: it is
// opt-in (grouping.enabled) for the report as for the daemon's alerts,
// and without it the report is as it always was.
func groupFindings(rep *report.Report, cfg *config.Config) {
	if g := cfg.EffectiveGrouping(); g.Enabled {
		rep.GroupFindings(group.Options{Window: g.Window, MinMembers: g.MinMembers})
	}
}

// Request is the run request of one workspace of cfg as a one-shot
// command runs it locally (`driftwatch accept`): after discover, with the
// same request, jail and network as an audit's run.
func Request(ctx context.Context, cfg *config.Config, discover func(context.Context, *config.Config) error, workspace string, logger *slog.Logger) (terraform.Request, error) {
	if err := discover(ctx, cfg); err != nil {
		return terraform.Request{}, err
	}
	targets, err := localTargets(cfg, pipeline.Filter{Names: []string{workspace}}, "", logger)
	if err != nil {
		return terraform.Request{}, err
	}
	return targets[0].Request, nil
}

// localTargets are f's targets as local runs: confined as
// terraform.sandbox says (sandbox.Resolve: it warns when runs are not
// isolated), their run directories under workDir when set.
func localTargets(cfg *config.Config, f pipeline.Filter, workDir string, logger *slog.Logger) ([]pipeline.Target, error) {
	iso, err := sandbox.Resolve(cfg.Terraform.Sandbox, cfg.Terraform.SandboxNetwork, logger)
	if err != nil {
		return nil, err
	}
	return pipeline.Targets(cfg, f, pipeline.Env{Jail: iso.Bwrap, JailNet: iso.Pasta, WorkDir: workDir})
}

// Adopt is `driftwatch adopt`: scan's local request (Request) handed to
// engine.Adopt, which generates and proves the named unmanaged resources'
// import blocks.
func Adopt(ctx context.Context, cfg *config.Config, discover func(context.Context, *config.Config) error, scan string, findings []string, logger *slog.Logger) (drift.AdoptOutcome, error) {
	req, err := Request(ctx, cfg, discover, scan, logger)
	if err != nil {
		return drift.AdoptOutcome{}, err
	}
	return engine.Adopt(ctx, req, findings)
}

// Validate is what `driftwatch validate` checks of the workspaces: their
// targets and policy rules (pipeline.Targets), and that each scan's binary
// has a query command (local.CheckQuery).
func Validate(ctx context.Context, cfg *config.Config) error {
	targets, err := pipeline.Targets(cfg, pipeline.Filter{}, pipeline.Env{})
	if err != nil {
		return err
	}
	for _, t := range targets {
		if t.Scan != nil {
			if err := local.CheckQuery(ctx, t.Request.Binary); err != nil {
				return fmt.Errorf("scan %q: %w", t.Name, err)
			}
		}
	}
	return nil
}
