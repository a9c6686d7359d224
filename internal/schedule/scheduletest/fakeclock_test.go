package scheduletest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule/scheduletest"
)

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestFakeClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := scheduletest.NewFakeClock(t0)
	require.Equal(t, t0, c.Now())

	late := c.NewTimerAt(t0.Add(2 * time.Minute))
	early := c.NewTimerAt(t0.Add(time.Minute))
	past := c.NewTimerAt(t0)
	require.True(t, fired(past.C()), "a deadline that is not in the future fires at once")
	require.False(t, past.Stop())
	require.Equal(t, 2, c.Timers())
	require.NoError(t, c.BlockUntilTimers(t.Context(), 2))

	c.Advance(59 * time.Second)
	require.False(t, fired(early.C()))
	at, ok := c.AdvanceToNext()
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Minute), at)
	require.True(t, fired(early.C()))
	require.False(t, fired(late.C()))
	require.Equal(t, 1, c.Timers())

	require.True(t, late.Stop())
	require.False(t, late.Stop())
	c.Advance(time.Hour)
	require.False(t, fired(late.C()), "stopped timer fired")
	_, ok = c.AdvanceToNext()
	require.False(t, ok)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, c.BlockUntilTimers(ctx, 1), context.Canceled)

	go func() { c.NewTimerAt(c.Now().Add(time.Second)) }()
	require.NoError(t, c.BlockUntilTimers(t.Context(), 1))
}
