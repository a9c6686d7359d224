package pipeline_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

func TestTargetsFilter(t *testing.T) {
	cfg, err := config.LoadFile("../../configs/examples/driftwatch.yaml")
	require.NoError(t, err)
	ts, err := pipeline.Targets(cfg, pipeline.Filter{Labels: map[string]string{"team": "net"}}, pipeline.Env{})
	require.NoError(t, err)
	require.Len(t, ts, 2)
	require.Equal(t, "network", ts[0].Name)
	require.Equal(t, "dns", ts[1].Name)
	ts, err = pipeline.Targets(cfg, pipeline.Filter{Names: []string{"release"}}, pipeline.Env{})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	_, err = pipeline.Targets(cfg, pipeline.Filter{Names: []string{"nope"}}, pipeline.Env{})
	require.EqualError(t, err, "unknown workspace nope")
}

// Every workspace's backend_config values (a local source's file's too)
// are among the secrets every run redacts, whichever workspace runs.
func TestTargetsRedactBackendConfig(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "backend.hcl"), []byte(`password = "CANARY-file-pw"`), 0o600))
	cfg := &config.Config{Workspaces: []config.Workspace{
		{Name: "a", Source: config.Source{Path: src}, BackendConfig: []string{"backend.hcl", "address=https://h/state?token=CANARY-tok"}},
		{Name: "b", Source: config.Source{Path: t.TempDir()}},
	}}
	ts, err := pipeline.Targets(cfg, pipeline.Filter{Names: []string{"b"}}, pipeline.Env{})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	for _, want := range []string{"CANARY-file-pw", "https://h/state?token=CANARY-tok", "CANARY-tok"} {
		require.Contains(t, ts[0].Request.Redact, want)
	}
}

// Env's owner and jail reach every request; its WorkDir replaces
// terraform.work_dir, and without it the config's stays. Select keeps
// what Targets keeps.
func TestTargetsEnv(t *testing.T) {
	cfg := &config.Config{
		Terraform: config.Terraform{WorkDir: "/var/lib/dw", Binary: "tofu"},
		Workspaces: []config.Workspace{
			{Name: "a", Source: config.Source{Path: t.TempDir()}, Labels: map[string]string{"team": "x"}},
			{Name: "b", Source: config.Source{Git: &config.GitSource{URL: "https://git.example/r", Ref: "main", Path: "live"}}, Binary: "terraform"},
		},
	}
	ts, err := pipeline.Targets(cfg, pipeline.Filter{}, pipeline.Env{})
	require.NoError(t, err)
	require.Len(t, ts, 2)
	for _, tg := range ts {
		require.Equal(t, "/var/lib/dw", tg.Request.WorkDir, tg.Name)
		require.Empty(t, tg.Request.Owner, tg.Name)
		require.Empty(t, tg.Request.Jail, tg.Name)
		require.NotEmpty(t, tg.Request.RunID, tg.Name)
	}
	require.Equal(t, "tofu", ts[0].Request.Binary)
	require.Equal(t, "terraform", ts[1].Request.Binary)
	require.Equal(t, &terraform.Git{URL: "https://git.example/r", Ref: "main", Path: "live"}, ts[1].Request.Source.Git)

	env := pipeline.Env{Owner: "store-1", Jail: "/usr/bin/bwrap", JailNet: "/usr/bin/pasta", WorkDir: "/cache"}
	ts, err = pipeline.Targets(cfg, pipeline.Filter{}, env)
	require.NoError(t, err)
	for _, tg := range ts {
		require.Equal(t, "store-1", tg.Request.Owner, tg.Name)
		require.Equal(t, "/usr/bin/bwrap", tg.Request.Jail, tg.Name)
		require.Equal(t, "/usr/bin/pasta", tg.Request.JailNet, tg.Name)
		require.Equal(t, "/cache", tg.Request.WorkDir, tg.Name)
	}

	f := pipeline.Filter{Labels: map[string]string{"team": "x"}}
	ws, err := f.Select(cfg)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, "a", ws[0].Name)
	_, err = pipeline.Filter{Names: []string{"a", "zz", "yy"}}.Select(cfg)
	require.EqualError(t, err, "unknown workspace zz, yy")
}

// A target's findings are located in its module's directory, or at its
// path in its git repository.
func TestTargetSourceDir(t *testing.T) {
	local := pipeline.Target{Request: terraform.Request{Source: terraform.Source{Path: "/srv/infra/net"}}}
	require.Equal(t, "/srv/infra/net", local.SourceDir())
	git := pipeline.Target{Request: terraform.Request{Source: terraform.Source{Path: "/var/cache/checkout",
		Git: &terraform.Git{URL: "https://git.example/infra.git", Path: "stacks/net"}}}}
	require.Equal(t, filepath.FromSlash("stacks/net"), git.SourceDir())
}
