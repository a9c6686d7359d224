package app

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

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
			cfg, err := LoadConfig(path)
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
