package runlog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
)

func TestRegistry(t *testing.T) {
	reg := runlog.NewRegistry()
	require.ErrorIs(t, reg.Cancel("r1"), runlog.ErrNotRunning)
	require.Nil(t, reg.Live("r1"))

	ctx, cancel := context.WithCancelCause(t.Context())
	reg.Add("r1", nil, cancel) // queued: no log yet
	require.Nil(t, reg.Live("r1"))
	l := runlog.New(1024, nil)
	reg.SetLog("r1", l)
	require.Same(t, l, reg.Live("r1"))

	require.NoError(t, reg.Cancel("r1"))
	require.ErrorIs(t, context.Cause(ctx), runlog.ErrCancelled)
	require.NoError(t, reg.Cancel("r1"), "twice is harmless")

	reg.Add("q1", runlog.New(1024, nil), nil) // queued: cancelled by the scheduler
	require.ErrorIs(t, reg.Cancel("q1"), runlog.ErrNotRunning)
	require.NotNil(t, reg.Live("q1"), "its log is live")

	reg.Remove("r1")
	require.Nil(t, reg.Live("r1"))
	require.ErrorIs(t, reg.Cancel("r1"), runlog.ErrNotRunning)
}
