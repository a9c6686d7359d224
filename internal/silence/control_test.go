package silence

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/server/control"
)

// The silences' errors become the server's kinds: a refused request keeps
// its reason, a standby its text.
func TestControlError(t *testing.T) {
	require.NoError(t, controlError(nil))
	var refused *control.SilenceError
	require.ErrorAs(t, controlError(&RequestError{Reason: "comment is required"}), &refused)
	require.Equal(t, "comment is required", refused.Reason)
	require.ErrorIs(t, controlError(fmt.Errorf("x: %w", ErrUnknownWorkspace)), control.ErrUnknownWorkspace)
	err := controlError(leader.ErrStandby)
	require.ErrorIs(t, err, control.ErrUnavailable)
	require.EqualError(t, err, leader.ErrStandby.Error())
	other := errors.New("disk full")
	require.Equal(t, other, controlError(other))
}
