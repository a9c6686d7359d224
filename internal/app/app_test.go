package app

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// The shipped configs pass `driftwatch validate`, notifiers included.
func TestValidateShippedConfigs(t *testing.T) {
	for _, f := range []string{"../../configs/driftwatch.example.yaml", "../../configs/examples/driftwatch.yaml"} {
		cfg, err := LoadConfig(f)
		require.NoError(t, err, f)
		require.NoError(t, Validate(cfg, slog.New(slog.DiscardHandler)), f)
	}
}
