package schedule_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
)

// The scheduler's refusals are the API's: an unknown job is an unknown
// workspace (404), a busy job a busy workspace (409), each keeping its
// own text for the log.
func TestErrorsAreRefusals(t *testing.T) {
	h := newHarness(t, nil)
	_, err := h.s.Queue("nope", schedule.TriggerManual)
	require.ErrorIs(t, err, schedule.ErrUnknownJob)
	require.ErrorIs(t, err, refusal.ErrUnknownWorkspace)
	require.NotErrorIs(t, err, refusal.ErrBusy)
	require.EqualError(t, err, `job "nope": unknown job`)

	require.ErrorIs(t, schedule.ErrBusy, refusal.ErrBusy)
	require.NotErrorIs(t, schedule.ErrBusy, refusal.ErrUnknownWorkspace)
	require.EqualError(t, schedule.ErrBusy, "job is already queued or running")
}
