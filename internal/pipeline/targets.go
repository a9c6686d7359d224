package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/backend"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Filter selects workspaces for an audit.
type Filter struct {
	Names  []string          // exact workspace names; empty = all
	Labels map[string]string // every label must match
}

// Env is what a caller adds to every terraform.Request beyond what the
// config says: who owns the runs and how they are confined. The zero
// value adds nothing.
type Env struct {
	// Owner tags every process of the runs (terraform.Request.Owner: the
	// daemon's store owner).
	Owner string
	// Jail and JailNet are the bubblewrap and pasta binaries local runs
	// are confined with (sandbox.Isolation's Bwrap and Pasta; "": none).
	Jail, JailNet string
	// WorkDir, if set, replaces terraform.work_dir (audit --cache-dir).
	WorkDir string
}

// Targets expands the config's workspaces into runnable targets, in
// inventory order, keeping those that match f: the one place a
// terraform.Request is built from the config (the daemon's inventory and
// the one-shot audit both call it).
func Targets(cfg *config.Config, f Filter, env Env) ([]Target, error) {
	ws, err := f.Select(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]Target, 0, len(ws))
	secrets := knownSecrets(cfg)
	for _, w := range ws {
		rules, err := policy.CompileRules(w.EffectiveForbidden(cfg.Defaults), w.Ignore)
		if err != nil {
			return nil, fmt.Errorf("workspace %q: %w", w.Name, err)
		}
		bin := w.Binary
		if bin == "" {
			bin = cfg.Terraform.Binary
		}
		req := terraform.Request{
			RunID:          drift.NewRunID(),
			Owner:          env.Owner,
			Jail:           env.Jail,
			JailNet:        env.JailNet,
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
			JailHostPorts:  append(append([]string(nil), cfg.Terraform.SandboxHostPorts...), w.SandboxHostPorts...),
			LogPlanText:    w.LogPlanText,
			NoFastPaths:    !cfg.Terraform.FastPathsOn(),
		}
		if env.WorkDir != "" {
			req.WorkDir = env.WorkDir
		}
		if g := w.Source.Git; g != nil {
			req.Source.Git = &terraform.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}
		} else {
			req.Source.Path = w.Source.Path
		}
		tg := Target{Name: w.Name, Labels: w.Labels, Owner: w.Owner, Request: req, Rules: rules}
		if sc := w.Scan; sc != nil {
			if tg.Scan, err = scanOf(sc); err != nil {
				return nil, fmt.Errorf("scan %q: %w", w.Name, err)
			}
			q := &terraform.Query{}
			for _, typ := range sc.Types {
				q.Lists = append(q.Lists, terraform.List{Type: typ, Provider: sc.ListProvider(typ), Config: sc.Config, Limit: sc.Limit})
			}
			tg.Request.Query = q
		}
		if a, ok := cfg.EffectiveAttribution(w); ok {
			tg.Attribution = &a
		}
		out = append(out, tg)
	}
	return out, nil
}

// Select is the config's workspaces f keeps, in inventory order; a name
// the config lacks is an error.
func (f Filter) Select(cfg *config.Config) ([]config.Workspace, error) {
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
	var out []config.Workspace
	for _, w := range cfg.Workspaces {
		if (len(want) == 0 || want[w.Name]) && matchLabels(w.Labels, f.Labels) {
			out = append(out, w)
		}
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

// maxSecretFile bounds what is read of one secret file for redaction.
const maxSecretFile = 64 << 10

// knownSecrets reads every secret the config names (config.SecretFiles,
// config.SecretValues) and every workspace's backend_config values
// (backend.ConfigSecrets: a file's values too, where the daemon can read
// it: an absolute path, or one in a local source): each run's log and
// errors are redacted of all of them, not only of its own workspace's. A
// file that cannot be read is skipped: its owner (a notifier, a run)
// reports that itself.
func knownSecrets(cfg *config.Config) []string {
	out := cfg.SecretValues()
	for _, w := range cfg.Workspaces {
		dir := "" // a git source's files are read by its runs
		if w.Source.Git == nil {
			dir = w.Source.Path
		}
		// No deadline: ConfigFileReader reads regular files only, bounded.
		out = append(out, backend.ConfigSecrets(w.BackendConfig, backend.ConfigFileReader(context.Background(), dir, dir))...)
	}
	for _, f := range cfg.SecretFiles() {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(fh, maxSecretFile))
		fh.Close()
		if v := strings.TrimSpace(string(b)); v != "" {
			out = append(out, v)
			// A git credentials file's "user:token": the token alone too.
			if _, tok, ok := strings.Cut(v, ":"); ok && !strings.Contains(v, "\n") {
				out = append(out, tok)
			}
		}
	}
	return out
}
