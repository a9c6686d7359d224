package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/config"
)

func TestTargetsFilter(t *testing.T) {
	cfg, err := config.LoadFile("../../configs/examples/driftwatch.yaml")
	require.NoError(t, err)
	ts, err := audit.Targets(cfg, audit.Filter{Labels: map[string]string{"team": "net"}})
	require.NoError(t, err)
	require.Len(t, ts, 2)
	require.Equal(t, "network", ts[0].Name)
	require.Equal(t, "dns", ts[1].Name)
	ts, err = audit.Targets(cfg, audit.Filter{Names: []string{"release"}})
	require.NoError(t, err)
	require.Len(t, ts, 1)
	_, err = audit.Targets(cfg, audit.Filter{Names: []string{"nope"}})
	require.EqualError(t, err, "unknown workspace nope")
}
