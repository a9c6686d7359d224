package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// inventoryConfig writes a config with one configured workspace and a
// discovery of two roots (a module they call is not one), and returns its
// path.
func inventoryConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	backend := "terraform {\n  backend \"local\" {}\n}\n"
	for name, body := range map[string]string{
		"live/envs/prod/network/main.tf":     backend + "module \"vpc\" {\n  source = \"./vpc\"\n}\n",
		"live/envs/prod/network/vpc/main.tf": "terraform {}\n",
		"live/envs/staging/app/main.tf":      "provider \"null\" {}\n",
		"legacy/main.tf":                     backend,
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`defaults:
  labels: {team: platform}
workspaces:
  - name: legacy
    source: {path: legacy}
    schedule: "@daily"
discover:
  - name_prefix: acme
    source: {path: live}
    defaults:
      schedule: "0 */6 * * *"
      owner: "@infra"
      labels:
        env: '{{index .Path 1}}'
`), 0o644))
	return path
}

func TestInventoryTable(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"inventory", "--config", inventoryConfig(t)}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Equal(t, `NAME                    SOURCE  PATH                    SCHEDULE     LABELS                     ORIGIN
legacy                  local   legacy                  @daily       team=platform              configured
acme-envs-prod-network  local   live/envs/prod/network  0 */6 * * *  env=prod,team=platform     discover[0]
acme-envs-staging-app   local   live/envs/staging/app   0 */6 * * *  env=staging,team=platform  discover[0]
`, out.String())
}

// The YAML form is a config's workspaces: list: no empty keys, origin and
// discovered path as comments, so that it can be pasted back as
// configuration (here: written beside the config and validated).
func TestInventoryYAML(t *testing.T) {
	var out, errOut bytes.Buffer
	cfg := inventoryConfig(t)
	code := run([]string{"inventory", "--config", cfg, "--format", "yaml"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Equal(t, `workspaces:
  - name: legacy # configured
    source:
      path: legacy
    schedule: '@daily'
    labels:
      team: platform
  - name: acme-envs-prod-network # discover[0]: envs/prod/network
    source:
      path: live/envs/prod/network
    schedule: 0 */6 * * *
    owner: '@infra'
    labels:
      env: prod
      team: platform
  - name: acme-envs-staging-app # discover[0]: envs/staging/app
    source:
      path: live/envs/staging/app
    schedule: 0 */6 * * *
    owner: '@infra'
    labels:
      env: staging
      team: platform
`, out.String())

	pasted := filepath.Join(filepath.Dir(cfg), "pasted.yaml")
	require.NoError(t, os.WriteFile(pasted, out.Bytes(), 0o644))
	var vout, verr bytes.Buffer
	require.Equal(t, 0, run([]string{"validate", "--config", pasted}, &vout, &verr), "the output is a valid config: %s", verr.String())
}

func TestInventoryErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 1, run([]string{"inventory", "--config", inventoryConfig(t), "--format", "json"}, &out, &errOut))
	require.Equal(t, "driftwatch: unknown format \"json\" (use table or yaml)\n", errOut.String())

	dir := t.TempDir()
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(path, []byte("discover:\n  - source: {path: nowhere}\n"), 0o644))
	errOut.Reset()
	require.Equal(t, 1, run([]string{"inventory", "--config", path}, &out, &errOut))
	require.Equal(t, "driftwatch: invalid config:\n"+path+":2: discover[0].source.path: stat "+filepath.Join(dir, "nowhere")+": no such file or directory\n", errOut.String())
	require.Empty(t, out.String())
}

// A git discovery is checked out by the inventory command: its rows show
// the URL and ref, and each root's path in the repository.
func TestInventoryGit(t *testing.T) {
	git := tftest.Program(t, "git")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	p := filepath.Join(repo, "stacks", "dns", "main.tf")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("provider \"null\" {}\n"), 0o644))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	path := filepath.Join(dir, "driftwatch.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`terraform: {git_cache_dir: cache}
discover:
  - source:
      git: {url: "file://`+repo+`", ref: main}
`), 0o644))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"inventory", "--config", path}, &out, &errOut), errOut.String())
	src := "file://" + repo + "@main" // the column is as wide as the URL
	want := fmt.Sprintf("NAME        %-*s  PATH        SCHEDULE  LABELS  ORIGIN\n", len(src), "SOURCE") +
		"stacks-dns  " + src + "  stacks/dns  @hourly   -       discover[0]\n"
	require.Equal(t, want, out.String())

	// validate checks nothing out, and says so rather than reporting the
	// git entry's workspaces as absent.
	out.Reset()
	require.Equal(t, 0, run([]string{"validate", "--config", path}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "ok, 0 workspaces")
	require.Contains(t, out.String(), "git discover: entries are not expanded by validate")

	// Its YAML has no empty keys (no credentials_file: ""), and pasted
	// back it is a configured git workspace.
	out.Reset()
	require.Equal(t, 0, run([]string{"inventory", "--config", path, "--format", "yaml"}, &out, &errOut), errOut.String())
	require.Equal(t, `workspaces:
  - name: stacks-dns # discover[0]: stacks/dns
    source:
      git:
        url: file://`+repo+`
        ref: main
        path: stacks/dns
    schedule: '@hourly'
`, out.String())
	pasted := filepath.Join(dir, "pasted.yaml")
	require.NoError(t, os.WriteFile(pasted, append([]byte("terraform: {git_cache_dir: cache}\n"), out.Bytes()...), 0o644))
	out.Reset()
	require.Equal(t, 0, run([]string{"validate", "--config", pasted}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "ok, 1 workspaces")
}
