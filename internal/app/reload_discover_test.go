package app

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// writeDiscoverConfig writes a config discovering the roots under
// dir/live, with a webhook notifier routing env=prod (the env label
// comes from the path) and default notifier hook.
func writeDiscoverConfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("http://127.0.0.1:9/hook\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	body := fmt.Sprintf(`store: { path: %q }
max_concurrent_runs: 1
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-secret }
alerts: { default_notifiers: [hook] }
discover:
  - source: { path: live }
    defaults:
      labels: { env: '{{index .Path 1}}' }
`, filepath.Join(dir, "dw.db"))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func writeRoot(t *testing.T, dir, rel string) {
	t.Helper()
	p := filepath.Join(dir, "live", filepath.FromSlash(rel), "main.tf")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("terraform {\n  backend \"local\" {}\n}\n"), 0o644))
}

func (d *daemon) targetNames() []string {
	var out []string
	for name := range *d.targets.Load() {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// A reload re-discovers: a new root becomes a scheduled workspace, a
// removed one retires: its open incident resolves through the outbox
// (one resolve message to its notifier), its pending one silently, and
// its runs and incident rows stay.
func TestReloadRediscovers(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	writeRoot(t, dir, "envs/dev")
	path := writeDiscoverConfig(t, dir)
	d := newTestDaemon(t, path, nil, nil)
	require.Equal(t, []string{"envs-dev", "envs-prod"}, d.targetNames())
	require.Equal(t, "dev", d.cfg.Load().Workspaces[0].Labels["env"])

	now := time.Now().UTC()
	f := drift.Finding{Kind: drift.KindDrift, Address: "null_resource.a", Type: "null_resource", Action: "update", Attributes: []string{"triggers"}}
	finishDrift(t, d, "envs-dev", now, f)
	runs, err := d.store.Runs(t.Context(), "envs-dev", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	due, err := d.store.DueMessages(t.Context(), now.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1) // the open
	require.NoError(t, d.store.MarkDelivered(t.Context(), due[0].ID, now, nil))

	writeRoot(t, dir, "envs/stage")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "live", "envs", "dev")))
	require.True(t, d.reload(path))
	require.Equal(t, []string{"envs-prod", "envs-stage"}, d.targetNames())
	stage := d.cfg.Load().Workspaces[1]
	require.Equal(t, "stage", stage.Labels["env"])
	require.Equal(t, "discover[0]", stage.Origin())

	ins, err := d.store.Incidents(t.Context(), "envs-dev")
	require.NoError(t, err)
	require.Len(t, ins, 1, "history: the incident row stays")
	require.Equal(t, store.IncidentResolved, ins[0].State)
	require.False(t, ins[0].ResolvedAt.IsZero())
	due, err = d.store.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "hook", due[0].Notifier)
	require.Equal(t, ins[0].Key, due[0].IncidentKey)
	var m notify.Message
	require.NoError(t, json.Unmarshal(due[0].Payload, &m))
	require.Equal(t, notify.EventResolve, m.Event)
	require.Equal(t, "envs-dev", m.Incident.Workspace)
	require.Equal(t, []drift.Finding{f}, m.Incident.Findings)
	require.Equal(t, "dev", m.Incident.Labels["env"], "routed and labelled as before the reload")
	runs, err = d.store.Runs(t.Context(), "envs-dev", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1, "history: the runs stay")

	// Nothing more to retire: another reload sends nothing.
	require.NoError(t, d.store.MarkDelivered(t.Context(), due[0].ID, time.Now(), nil))
	require.True(t, d.reload(path))
	due, err = d.store.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Empty(t, due)
}

// A workspace removed while the daemon was stopped retires at the sweep
// (reloadLoop, once leading), routed by the current config's defaults.
func TestRetireRemovedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	writeRoot(t, dir, "envs/dev")
	path := writeDiscoverConfig(t, dir)
	d := newTestDaemon(t, path, nil, nil)
	now := time.Now().UTC()
	finishDrift(t, d, "envs-dev", now, drift.Finding{Kind: drift.KindDrift, Address: "null_resource.a", Type: "null_resource", Action: "update"})
	due, err := d.store.DueMessages(t.Context(), now.Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.NoError(t, d.store.MarkDelivered(t.Context(), due[0].ID, now, nil))

	require.NoError(t, os.RemoveAll(filepath.Join(dir, "live", "envs", "dev")))
	d2 := newTestDaemon(t, path, nil, nil) // a restart: the store is reopened
	require.Equal(t, []string{"envs-prod"}, d2.targetNames())
	d2.retireRemoved(t.Context(), nil)
	ins, err := d2.store.Incidents(t.Context(), "envs-dev")
	require.NoError(t, err)
	require.Equal(t, store.IncidentResolved, ins[0].State)
	due, err = d2.store.DueMessages(t.Context(), time.Now().Add(time.Minute), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "hook", due[0].Notifier)
}

// A reload whose discovery fails (a root's file does not parse) keeps
// the previous inventory: nothing is taken for removed.
func TestReloadDiscoveryErrorKeepsInventory(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	path := writeDiscoverConfig(t, dir)
	d := newTestDaemon(t, path, nil, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "live", "envs", "prod", "broken.tf"), []byte("terraform {\n"), 0o644))
	require.False(t, d.reload(path))
	require.Equal(t, []string{"envs-prod"}, d.targetNames())
}

// gitInit makes repo a git repository on branch main with one commit of
// everything in it.
func gitInit(t *testing.T, git, repo string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
}

// daemon --once checks a git discovery out before its one pass: the
// discovered root runs, and is recorded in the store.
func TestDaemonOnceDiscoversGit(t *testing.T) {
	bins, cli := tftest.Tools(t)
	git := tftest.Program(t, "git")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	p := filepath.Join(repo, "live", "envs", "prod", "main.tf")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("terraform {}\nresource \"terraform_data\" \"x\" {\n  input = \"x\"\n}\n"), 0o644))
	gitInit(t, git, repo)
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`terraform:
  binary: %q
  cli_config_file: %q
  sandbox: "off"
  git_cache_dir: cache
store: { path: %q }
discover:
  - source:
      git: { url: "file://%s", ref: main, path: live }
`, bins[0], cli, filepath.Join(dir, "dw.db"), repo)), 0o644))
	code, err := RunDaemon(t.Context(), DaemonOptions{ConfigPath: path, Once: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Equal(t, 2, code, "the discovered root's pending change")

	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "dw.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer st.Close()
	runs, err := st.Runs(t.Context(), "envs-prod", 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, drift.StatusPending, runs[0].Status)
}

// Discovered workspaces run for real, under terraform and tofu: a git
// discovery (Audit checks the repository out; the whole of it, so a
// root's ../ module is there) and a local one, each root planned with its
// own local modules.
func TestAuditDiscoveredE2E(t *testing.T) {
	bins, cli := tftest.Tools(t)
	git := tftest.Program(t, "git")
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			dir, err := os.MkdirTemp("", "dwdisc")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			repo := filepath.Join(dir, "repo")
			for name, body := range map[string]string{
				"live/envs/prod/main.tf":     "terraform {\n  required_version = \">= 1.0\"\n}\nmodule \"thing\" {\n  source = \"../../modules/thing\"\n}\n",
				"live/envs/dev/main.tf":      "terraform {\n  required_version = \">= 1.0\"\n}\nmodule \"svc\" {\n  source = \"./svc\"\n}\n",
				"live/envs/dev/svc/main.tf":  "terraform {}\nresource \"terraform_data\" \"svc\" {\n  input = \"svc\"\n}\n",
				"live/modules/thing/main.tf": "terraform {}\nresource \"terraform_data\" \"thing\" {\n  input = \"thing\"\n}\n",
			} {
				p := filepath.Join(repo, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			}
			gitInit(t, git, repo)
			path := filepath.Join(dir, "driftwatch.yaml")
			require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`terraform:
  binary: %q
  cli_config_file: %q
  sandbox: "off"
  git_cache_dir: cache
discover:
  - source:
      git: { url: "file://%s", ref: main, path: live }
    defaults:
      labels: { env: '{{index .Path 1}}' }
  - name_prefix: local
    source: { path: repo/live }
    include: [envs/dev]
`, bin, cli, repo)), 0o644))
			cfg, err := config.LoadFile(path)
			require.NoError(t, err)
			rep, err := Audit(t.Context(), AuditOptions{Config: cfg, Concurrency: 2, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			got := map[string]string{}
			for _, w := range rep.Workspaces {
				require.Empty(t, w.Error, w.Name)
				var addrs []string
				for _, f := range w.Findings {
					if f.Kind == drift.KindPending { // not the backend policy's findings
						addrs = append(addrs, f.Address)
					}
				}
				got[w.Name] = string(w.Status) + " " + strings.Join(addrs, ",") + " env=" + w.Labels["env"]
			}
			require.Equal(t, map[string]string{
				"local-envs-dev": "pending module.svc.terraform_data.svc env=",
				"envs-dev":       "pending module.svc.terraform_data.svc env=dev",
				"envs-prod":      "pending module.thing.terraform_data.thing env=prod",
			}, got)
		})
	}
}

// A discovery refresh (reloadLoop, every DiscoverRefresh for git
// entries) applies a new config only when the inventory changed.
func TestRefreshAppliesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	writeRoot(t, dir, "envs/prod")
	path := writeDiscoverConfig(t, dir)
	d := newTestDaemon(t, path, nil, nil)
	before := d.cfg.Load()
	require.True(t, d.refresh(t.Context(), path))
	require.Same(t, before, d.cfg.Load(), "same inventory: nothing applied")

	writeRoot(t, dir, "envs/dev")
	require.True(t, d.refresh(t.Context(), path))
	require.Equal(t, []string{"envs-dev", "envs-prod"}, d.targetNames())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "live", "envs", "dev", "bad.tf"), []byte("provider {"), 0o644))
	require.False(t, d.refresh(t.Context(), path))
	require.Equal(t, []string{"envs-dev", "envs-prod"}, d.targetNames(), "a failed discovery keeps the inventory")
}
