package app

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
)

// The shipped configs pass `driftwatch validate`, notifiers included.
func TestValidateShippedConfigs(t *testing.T) {
	for _, f := range []string{"../../configs/driftwatch.example.yaml", "../../configs/examples/driftwatch.yaml"} {
		cfg, err := config.LoadFile(f)
		require.NoError(t, err, f)
		require.NoError(t, Validate(cfg, slog.New(slog.DiscardHandler)), f)
	}
}

func TestTargetsFilter(t *testing.T) {
	cfg, err := config.LoadFile("../../configs/examples/driftwatch.yaml")
	require.NoError(t, err)
	ts, err := Targets(cfg, Filter{Labels: map[string]string{"team": "net"}})
	require.NoError(t, err)
	require.Len(t, ts, 2)
	require.Equal(t, "network", ts[0].Name)
	require.Equal(t, "dns", ts[1].Name)
	ts, err = Targets(cfg, Filter{Names: []string{"release"}})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	_, err = Targets(cfg, Filter{Names: []string{"nope"}})
	require.EqualError(t, err, "unknown workspace nope")
}
