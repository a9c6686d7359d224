package pipeline_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/pipeline"
)

func TestTargetsFilter(t *testing.T) {
	cfg, err := config.LoadFile("../../configs/examples/driftwatch.yaml")
	require.NoError(t, err)
	ts, err := pipeline.Targets(cfg, pipeline.Filter{Labels: map[string]string{"team": "net"}})
	require.NoError(t, err)
	require.Len(t, ts, 2)
	require.Equal(t, "network", ts[0].Name)
	require.Equal(t, "dns", ts[1].Name)
	ts, err = pipeline.Targets(cfg, pipeline.Filter{Names: []string{"release"}})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	_, err = pipeline.Targets(cfg, pipeline.Filter{Names: []string{"nope"}})
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
	ts, err := pipeline.Targets(cfg, pipeline.Filter{Names: []string{"b"}})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	for _, want := range []string{"CANARY-file-pw", "https://h/state?token=CANARY-tok", "CANARY-tok"} {
		require.Contains(t, ts[0].Request.Redact, want)
	}
}
