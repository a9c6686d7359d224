package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
)

func TestConcurrencyGroups(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
concurrency_groups:
  - label: account
    max_concurrent: 2
    backoff: 30s
  - label: region
workspaces:
  - { name: a, source: { path: . }, labels: { account: "111", region: eu } }
  - { name: b, source: { path: . }, labels: { region: us } }
  - { name: c, source: { path: . } }
`))
	require.NoError(t, err)
	require.Equal(t, []config.Group{
		{Key: "account=111", Max: 2, Backoff: 30 * time.Second, BackoffMax: 15 * time.Minute},
		{Key: "region=eu", Max: 1, Backoff: time.Minute, BackoffMax: 15 * time.Minute},
	}, cfg.Groups(cfg.Workspaces[0]))
	require.Equal(t, []config.Group{{Key: "region=us", Max: 1, Backoff: time.Minute, BackoffMax: 15 * time.Minute}}, cfg.Groups(cfg.Workspaces[1]))
	require.Empty(t, cfg.Groups(cfg.Workspaces[2]), "a workspace without the labels is in no group")

	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range map[string]struct{ yaml, want string }{
		"no label": {"concurrency_groups:\n  - max_concurrent: 2\n",
			"driftwatch.yaml:2: concurrency_groups[0].label: required"},
		"bad label": {"concurrency_groups:\n  - label: \"a b\"\n",
			`driftwatch.yaml:2: concurrency_groups[0].label: invalid label name "a b"`},
		"duplicate": {"concurrency_groups:\n  - label: account\n  - label: account\n",
			`driftwatch.yaml:3: concurrency_groups[1].label: duplicate concurrency group label "account"`},
		"negative max": {"concurrency_groups:\n  - label: account\n    max_concurrent: -1\n",
			"driftwatch.yaml:3: concurrency_groups[0].max_concurrent: must be at least 1, got -1"},
		"short backoff": {"concurrency_groups:\n  - label: account\n    backoff: 10ms\n",
			"driftwatch.yaml:3: concurrency_groups[0].backoff: at least 1s, got 10ms"},
		"max below backoff": {"concurrency_groups:\n  - label: account\n    backoff: 2m\n    backoff_max: 1m\n",
			"driftwatch.yaml:4: concurrency_groups[0].backoff_max: must not be below backoff (2m0s), got 1m0s"},
		"unknown key": {"concurrency_groups:\n  - label: account\n    max: 2\n",
			"driftwatch.yaml:3"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.Error(t, err)
			require.Contains(t, strings.ReplaceAll(err.Error(), dir+"/", ""), c.want)
		})
	}
}
