package app

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The server answers from the errors it defines: the daemon's Control maps
// the scheduler's and the run registry's onto them, keeping the text the
// API shows and the original error for the log.
func TestControlMapsErrors(t *testing.T) {
	d, br := newQueueDaemon(t)
	c := control{d: d}

	running, err := c.Trigger("net")
	require.NoError(t, err)
	require.NotEmpty(t, running)
	require.Eventually(t, func() bool { active, started := br.state(running); return active == 1 && started }, 10*time.Second, time.Millisecond)
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
		d.mu.Lock()
		d.adopted["db"] = true
		d.mu.Unlock()
		t.Cleanup(func() { d.mu.Lock(); delete(d.adopted, "db"); d.mu.Unlock() })
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
		d.leading.Store(false)
		t.Cleanup(func() { d.leading.Store(true) })
		_, err := c.Trigger("db")
		require.ErrorIs(t, err, server.ErrUnavailable)
		require.EqualError(t, err, errStandby.Error(), "the 503 shows the daemon's reason")
		require.ErrorIs(t, c.Ready(), errStandby)
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
	t.Run("standby naming the leader", func(t *testing.T) {
		// What notLeading returns while another daemon holds the Lease.
		sb := standbyError{leader: "driftwatch-1_0badf00d"}
		require.ErrorIs(t, sb, errStandby)
		for _, err := range []error{triggerError("", sb), cancelError(sb)} {
			require.ErrorIs(t, err, server.ErrUnavailable)
			require.EqualError(t, err, "unavailable: this replica is a standby; the leader is driftwatch-1_0badf00d")
		}
		require.ErrorIs(t, cancelError(errStandby), server.ErrUnavailable)
	})
	t.Run("standby refuses cancel", func(t *testing.T) {
		d.electing = true
		d.leading.Store(false)
		t.Cleanup(func() { d.electing = false; d.leading.Store(true) })
		_, err := c.Cancel("any")
		require.ErrorIs(t, err, server.ErrUnavailable)
		require.EqualError(t, err, errStandby.Error(), "no elector: the leader is unknown")
	})
	t.Run("other errors pass through", func(t *testing.T) {
		boom := errors.New("boom")
		require.Same(t, boom, triggerError("", boom))
		require.Same(t, boom, cancelError(boom))
	})
}
