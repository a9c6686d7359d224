package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/runid"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/runner/sandbox"
)

// Filter selects workspaces for an audit.
type Filter struct {
	Names  []string          // exact workspace names; empty = all
	Labels map[string]string // every label must match
}

// Targets expands the config's workspaces into runnable targets, in
// inventory order, keeping those that match f.
func Targets(cfg *config.Config, f Filter) ([]audit.Target, error) {
	known := map[string]bool{}
	for _, w := range cfg.Workspaces {
		known[w.Name] = true
	}
	var unknown []string
	want := map[string]bool{}
	for _, n := range f.Names {
		if !known[n] {
			unknown = append(unknown, n)
		}
		want[n] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown workspace %s", strings.Join(unknown, ", "))
	}
	var out []audit.Target
	secrets := knownSecrets(cfg)
	for _, w := range cfg.Workspaces {
		if len(want) > 0 && !want[w.Name] {
			continue
		}
		if !matchLabels(w.Labels, f.Labels) {
			continue
		}
		rules, err := policy.CompileRules(w.EffectiveForbidden(cfg.Defaults), w.Ignore)
		if err != nil {
			return nil, fmt.Errorf("workspace %q: %w", w.Name, err)
		}
		bin := w.Binary
		if bin == "" {
			bin = cfg.Terraform.Binary
		}
		req := runner.Request{
			RunID:          newRunID(),
			Workspace:      w.Name,
			Binary:         bin,
			TFWorkspace:    w.Workspace,
			VarFiles:       w.VarFiles,
			Vars:           w.Vars,
			Env:            w.Env,
			SecretEnvFiles: w.SecretEnvFiles,
			BackendConfig:  w.BackendConfig,
			Timeout:        w.EffectiveTimeout(cfg.Defaults),
			CLIConfigFile:  cfg.Terraform.CLIConfigFile,
			PluginCacheDir: cfg.Terraform.PluginCacheDir,
			WorkDir:        cfg.Terraform.WorkDir,
			GitCacheDir:    cfg.Terraform.GitCacheDir,
			KillGrace:      time.Duration(cfg.Terraform.KillGrace),
			Backend:        cfg.EffectiveBackendPolicy(w),
			Redact:         secrets,
			JailPaths:      cfg.Terraform.SandboxPaths,
			LogPlanText:    w.LogPlanText,
		}
		if g := w.Source.Git; g != nil {
			req.Source.Git = &runner.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}
		} else {
			req.Source.Path = w.Source.Path
		}
		out = append(out, audit.Target{Name: w.Name, Labels: w.Labels, Owner: w.Owner, Request: req, Rules: rules})
	}
	return out, nil
}

func matchLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// ParseLabels parses "k=v" selectors.
func ParseLabels(sel []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range sel {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid label selector %q (want key=value)", s)
		}
		out[k] = v
	}
	return out, nil
}

// newRunID mints run ids, and the other random ids of the daemon
// (remediations, outbox messages, the leader identity's suffix).
func newRunID() string { return runid.New() }

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
}

// Audit runs every selected workspace once and returns the report.
func Audit(ctx context.Context, o AuditOptions) (*report.Report, error) {
	if o.Config == nil {
		return nil, errors.New("driftwatch/app: AuditOptions.Config is required")
	}
	if o.Logger == nil {
		return nil, errors.New("driftwatch/app: AuditOptions.Logger is required")
	}
	targets, err := Targets(o.Config, o.Filter)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, errors.New("no workspace matches the filters")
	}
	iso, err := isolation(o.Config, o.Logger)
	if err != nil {
		return nil, err
	}
	for i := range targets {
		targets[i].Request.Jail = iso.Bwrap
	}
	a := &audit.Auditor{Runner: local.New(o.Logger), Logger: o.Logger}
	var obs audit.Observer
	if o.Progress != nil {
		p := report.NewProgress(o.Progress, o.ProgressTTY, len(targets))
		defer p.Close()
		obs = p
	}
	start := time.Now()
	results := a.RunAll(ctx, targets, o.Concurrency, obs)
	return report.New(start, time.Now(), results), nil
}

// isolation resolves terraform.sandbox for local runs and warns when runs
// are not isolated from the daemon and from each other.
func isolation(cfg *config.Config, logger *slog.Logger) (sandbox.Isolation, error) {
	iso, err := sandbox.DetectIsolation(cfg.Terraform.Sandbox)
	if err != nil {
		return iso, err
	}
	if iso.Mode != "namespaces" {
		logger.Warn("local runs are not isolated: a workspace's Terraform code can read what the daemon's user can (other workspaces' secrets, the daemon's files)",
			"sandbox", iso.Mode, "reason", iso.Reason)
	}
	return iso, nil
}

// Validate checks what `driftwatch validate` can check beyond the config
// file itself without running anything: targets and policy rules, and every
// notifier's constructor (secret files readable and well-formed).
func Validate(cfg *config.Config, logger *slog.Logger) error {
	if _, err := Targets(cfg, Filter{}); err != nil {
		return err
	}
	_, err := buildNotifiers(cfg, logger)
	return err
}

// WorkspaceNames lists the config's workspace names, sorted (for validate).
func WorkspaceNames(cfg *config.Config) []string {
	var n []string
	for _, w := range cfg.Workspaces {
		n = append(n, w.Name)
	}
	sort.Strings(n)
	return n
}
