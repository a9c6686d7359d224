package leader

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
)

// A daemon that does not schedule is refused as unavailable (the API's
// 503), with the text that says why: ErrStandby's, or the StandbyError's
// naming the Lease holder.
func TestStandbyIsUnavailable(t *testing.T) {
	s := New(slog.New(slog.DiscardHandler))
	err := s.Ready()
	require.ErrorIs(t, err, ErrStandby)
	require.ErrorIs(t, err, refusal.ErrUnavailable)
	require.EqualError(t, err, "not scheduling: a standby (another daemon holds the leader Lease), starting or stopping")
	s.SetLeading(true)
	require.NoError(t, s.Ready())

	sb := StandbyError{Leader: "driftwatch-1_0badf00d"}
	require.ErrorIs(t, sb, ErrStandby)
	require.ErrorIs(t, sb, refusal.ErrUnavailable)
	require.NotErrorIs(t, sb, refusal.ErrBusy)
	require.EqualError(t, sb, "unavailable: this replica is a standby; the leader is driftwatch-1_0badf00d")
}
