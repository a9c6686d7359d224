package inventory

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// discoverTree writes a tree of Terraform roots and modules under dir.
func discoverTree(t *testing.T, dir string) {
	t.Helper()
	backend := "terraform {\n  backend \"local\" {}\n}\n"
	for name, body := range map[string]string{
		"live/envs/prod/network/main.tf":      backend + "module \"vpc\" {\n  source = \"./vpc\"\n}\n",
		"live/envs/staging/app/main.tf.json":  `{"provider": {"null": {}}}`,
		"live/envs/staging/app/vars.tfvars":   "",
		"live/envs/prod/network/vpc/main.tf":  "terraform {\n  required_version = \">= 1.5\"\n}\n",
		"live/sandbox/main.tf":                backend,
		"live/envs/prod/network/README.md":    "",
		"live/envs/prod/network/extra/foo.md": "",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

func loadString(t *testing.T, dir, yaml string) (*config.Config, error) {
	t.Helper()
	file := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(file, []byte(yaml), 0o644))
	return Load(file)
}

func TestDiscoverLocal(t *testing.T) {
	dir := t.TempDir()
	discoverTree(t, dir)
	cfg, err := loadString(t, dir, `defaults:
  labels: {team: platform, env: default}
  remediation: {mode: auto}
workspaces:
  - name: hand-made
    source: {path: live/sandbox}
discover:
  - name_prefix: acme
    source: {path: live}
    include: ["envs/**"]
    defaults:
      schedule: "@daily"
      owner: "@infra"
      labels:
        env: '{{index .Path 1}}'
        stack: '{{.Dir}}'
`)
	require.NoError(t, err)
	var names []string
	for _, w := range cfg.Workspaces {
		names = append(names, w.Name)
	}
	require.Equal(t, []string{"hand-made", "acme-envs-prod-network", "acme-envs-staging-app"}, names)

	require.Equal(t, "configured", cfg.Workspaces[0].Origin())
	net := cfg.Workspaces[1]
	require.Equal(t, "discover[0]", net.Origin())
	require.Equal(t, &config.Discovered{Entry: 0, Path: "envs/prod/network"}, net.Discovered)
	require.Equal(t, filepath.Join(dir, "live", "envs", "prod", "network"), net.Source.Path)
	require.Equal(t, "@daily", net.Schedule)
	require.Equal(t, "@infra", net.Owner)
	require.Equal(t, map[string]string{"team": "platform", "env": "prod", "stack": "envs/prod/network"}, net.Labels,
		"templates per root, over defaults.labels")
	require.Equal(t, config.RemediationOff, cfg.EffectiveRemediation(net).Mode, "remediation is off unless the entry sets it")
	require.Equal(t, config.RemediationAuto, cfg.EffectiveRemediation(cfg.Workspaces[0]).Mode)

	app := cfg.Workspaces[2]
	require.Equal(t, "staging", app.Labels["env"])
	require.Equal(t, config.DefaultSchedule, cfg.Workspaces[0].Schedule)
}

func TestDiscoverRemediationSet(t *testing.T) {
	dir := t.TempDir()
	discoverTree(t, dir)
	cfg, err := loadString(t, dir, `discover:
  - source: {path: live/sandbox}
    defaults:
      remediation: {mode: approve}
`)
	require.NoError(t, err)
	require.Len(t, cfg.Workspaces, 1)
	require.Equal(t, "root", cfg.Workspaces[0].Name, "the tree's own top is a root")
	require.Equal(t, config.RemediationApprove, cfg.EffectiveRemediation(cfg.Workspaces[0]).Mode)
}

// Every invalid discover: entry names file, line and key.
func TestDiscoverInvalid(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"bad-glob": {`discover:
  - source: {path: live}
    exclude: ["a/["]
`, `driftwatch.yaml:3: discover[0].exclude[0]: invalid glob "a/[": syntax error in pattern`},
		"bad-template": {`discover:
  - source: {path: live}
    defaults:
      labels:
        env: '{{index .Path 1'
`, `driftwatch.yaml:5: discover[0].defaults.labels.env: invalid template "{{index .Path 1": unclosed action`},
		"template-out-of-range": {`discover:
  - source: {path: live}
    include: [sandbox]
    defaults:
      labels:
        env: '{{index .Path 1}}'
`, `driftwatch.yaml:6: discover[0].defaults.labels.env: root "sandbox" (path ["sandbox"]): executing "env" at <index .Path 1>: error calling index: reflect: slice index out of range`},
		"unknown-field": {`discover:
  - source: {path: live}
    defaults:
      labels:
        env: '{{.Env}}'
`, `driftwatch.yaml:5: discover[0].defaults.labels.env: root "envs/prod/network" (path ["envs" "prod" "network"]): executing "env" at <.Env>: can't evaluate field Env in type config.DiscoverData`},
		"missing-source": {`discover:
  - source: {path: nowhere}
`, `driftwatch.yaml:2: discover[0].source.path: stat DIR/nowhere: no such file or directory`},
		"no-source": {`discover:
  - include: ["*"]
`, `driftwatch.yaml:2: discover[0].source: set exactly one of path or git`},
		"bad-prefix": {`discover:
  - source: {path: live}
    name_prefix: Acme_
`, `driftwatch.yaml:3: discover[0].name_prefix: "Acme_" is not a DNS label (lowercase letters, digits and '-')`},
		"bad-schedule": {`discover:
  - source: {path: live}
    defaults: {schedule: "every day"}
`, `driftwatch.yaml:3: discover[0].defaults.schedule: `},
		"module-outside-local-root": {`discover:
  - source: {path: live}
    include: ["envs/**"]
`, `driftwatch.yaml:2: discover[0].source.path: root "envs/prod/dns" calls local modules outside its directory (modules/zone), which a local source does not copy into the run: discover this tree from git (source.git), or exclude the root`},
		"unknown-key": {`discover:
  - source: {path: live}
    exclud: [x]
`, `driftwatch.yaml:3: discover[0].exclud: unknown key "exclud" (did you mean "exclude"?)`},
		"collides-with-configured": {`workspaces:
  - name: sandbox
    source: {path: live/sandbox}
discover:
  - source: {path: live}
`, `driftwatch.yaml:5: discover[0]: root "sandbox": duplicate workspace name "sandbox" (first defined at DIR/driftwatch.yaml:2: workspaces[0].name)`},
		"roots-collide": {`discover:
  - source: {path: live}
`, `driftwatch.yaml:2: discover[0].source: discover in DIR/live: roots "envs-prod" and "envs/prod" both get the name "envs-prod"`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			discoverTree(t, dir)
			if name == "module-outside-local-root" {
				writeFiles(t, dir, map[string]string{
					"live/envs/prod/dns/main.tf": "provider \"null\" {}\nmodule \"z\" {\n  source = \"../../../modules/zone\"\n}\n",
					"live/modules/zone/main.tf":  "terraform {}\n",
				})
			}
			if name == "roots-collide" {
				for _, d := range []string{"envs-prod", "envs/prod"} {
					p := filepath.Join(dir, "live", d, "main.tf")
					require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
					require.NoError(t, os.WriteFile(p, []byte("provider \"null\" {}\n"), 0o644))
				}
			}
			_, err := loadString(t, dir, c.yaml)
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir, "DIR")
			want := "DIR/" + c.want
			if strings.HasSuffix(c.want, ": ") {
				require.True(t, strings.HasPrefix(got, want), "got %q\nwant prefix %q", got, want)
				return
			}
			require.Equal(t, want, got)
		})
	}
}

func TestDiscoverGit(t *testing.T) {
	git := tftest.Program(t, "git")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	discoverTree(t, repo)
	writeFiles(t, repo, map[string]string{ // a git run has the whole repository: ../ modules are fine
		"live/envs/prod/dns/main.tf": "provider \"null\" {}\nmodule \"z\" {\n  source = \"../../../modules/zone\"\n}\n",
		"live/modules/zone/main.tf":  "terraform {}\n",
	})
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cfg, err := loadString(t, dir, `terraform:
  git_cache_dir: cache
discover:
  - source:
      git: {url: "file://`+repo+`", ref: main, path: live}
    exclude: ["sandbox"]
    defaults:
      labels: {env: '{{index .Path 1}}'}
`)
	require.NoError(t, err)
	require.Empty(t, cfg.Workspaces, "git discovery waits for DiscoverGit")
	require.True(t, cfg.HasGitDiscovery())

	require.NoError(t, DiscoverGit(t.Context(), cfg, 0))
	require.Len(t, cfg.Workspaces, 3)
	require.Equal(t, "envs-prod-dns", cfg.Workspaces[0].Name)
	w := cfg.Workspaces[1]
	require.Equal(t, "envs-prod-network", w.Name)
	require.Equal(t, &config.GitSource{URL: "file://" + repo, Ref: "main", Path: "live/envs/prod/network"}, w.Source.Git)
	require.Equal(t, map[string]string{"env": "prod"}, w.Labels)
	require.Equal(t, config.DefaultSchedule, w.Schedule, "validated: defaults applied")
	require.Equal(t, "discover[0]", w.Origin())

	// Expanded once: a second call (audit after the caller expanded)
	// adds nothing.
	require.NoError(t, DiscoverGit(t.Context(), cfg, 0))
	require.Len(t, cfg.Workspaces, 3)

	// The one-shot commands' discovery names itself in its error.
	gone, err := loadString(t, dir, `terraform:
  git_cache_dir: cache
discover:
  - source:
      git: {url: "file://`+filepath.Join(dir, "gone")+`", ref: main, path: live}
`)
	require.NoError(t, err)
	err = DiscoverOnce(t.Context(), gone)
	require.ErrorContains(t, err, "discovery: ")
	require.NoError(t, DiscoverOnce(t.Context(), cfg), "nothing left to expand")
}
