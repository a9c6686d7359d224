package sandbox

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// Runs without a sandbox are warned about, and a bad setting is an error.
func TestResolveWarns(t *testing.T) {
	var buf bytes.Buffer
	iso, err := Resolve("off", "host", slog.New(slog.NewTextHandler(&buf, nil)))
	require.NoError(t, err)
	require.Equal(t, "none", iso.Mode)
	require.Contains(t, buf.String(), "local runs are not isolated")
	require.Contains(t, buf.String(), "local runs share this machine's network")
	_, err = Resolve("bogus", "", slog.New(slog.DiscardHandler))
	require.Error(t, err)
}
