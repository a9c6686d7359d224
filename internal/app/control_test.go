package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/run"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner/runnertest"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The server answers from the errors it names: the daemon's Control
// returns the scheduler's, the run registry's and the leader's, which
// match them (refusal's, runlog's), keeping the text the API shows and
// the original error for the log.
func TestControlErrors(t *testing.T) {
	br := runnertest.NewBlocking()
	d := newTestDaemon(t, writeConfig(t, t.TempDir(), "off", "off"), br, nil)
	d.schedule(t)
	c := d.control()

	running, err := c.Trigger("net")
	require.NoError(t, err)
	require.NotEmpty(t, running)
	require.Eventually(t, func() bool { active, started := br.State(running); return active == 1 && started }, 10*time.Second, time.Millisecond)
	require.Same(t, d.runs.Live(running), c.LiveLog(running))

	t.Run("busy names the run", func(t *testing.T) {
		id, err := c.Trigger("net")
		require.Empty(t, id)
		require.ErrorIs(t, err, server.ErrBusy)
		require.ErrorIs(t, err, schedule.ErrBusy)
		var busy *server.BusyError
		require.ErrorAs(t, err, &busy)
		require.Equal(t, running, busy.RunID)
	})
	t.Run("busy with an adopted job", func(t *testing.T) {
		d.runs.Adopting([]run.Adopted{{Workspace: "db", RunID: "left-by-a-previous-daemon"}})
		_, err := c.Trigger("db")
		require.ErrorIs(t, err, server.ErrBusy)
		var busy *server.BusyError
		require.ErrorAs(t, err, &busy)
		require.Empty(t, busy.RunID, "no run the API shows")
	})
	t.Run("unknown workspace", func(t *testing.T) {
		_, err := c.Trigger("nope")
		require.ErrorIs(t, err, server.ErrUnknownWorkspace)
		require.ErrorIs(t, err, schedule.ErrUnknownJob)
		require.NotErrorIs(t, err, server.ErrBusy)
	})
	t.Run("standby", func(t *testing.T) {
		d.leader.SetLeading(false)
		t.Cleanup(func() { d.leader.SetLeading(true) })
		_, err := c.Trigger("db")
		require.ErrorIs(t, err, server.ErrUnavailable)
		require.EqualError(t, err, leader.ErrStandby.Error(), "the 503 shows the daemon's reason")
		require.ErrorIs(t, c.Ready(), leader.ErrStandby)
	})
	require.NoError(t, c.Ready())

	t.Run("cancel", func(t *testing.T) {
		queued, err := c.Cancel(running)
		require.NoError(t, err)
		require.False(t, queued)
		waitRun(t, d, running, store.RunCancelled)
		require.Eventually(t, func() bool { return d.runs.Live(running) == nil }, 10*time.Second, time.Millisecond)
		for _, id := range []string{running, "nope"} {
			_, err := c.Cancel(id)
			require.ErrorIs(t, err, server.ErrNotRunning, id)
			require.ErrorIs(t, err, runlog.ErrNotRunning, id)
			require.EqualError(t, err, runlog.ErrNotRunning.Error(), id)
		}
	})
	t.Run("standby refuses cancel", func(t *testing.T) {
		d.leader.SetLeading(false)
		t.Cleanup(func() { d.leader.SetLeading(true) })
		_, err := c.Cancel("any")
		require.ErrorIs(t, err, server.ErrUnavailable)
		require.EqualError(t, err, leader.ErrStandby.Error(), "no elector: the leader is unknown")
	})
}
