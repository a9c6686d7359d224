package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// A run queued by a previous process is queued again as it was: same id,
// trigger and queue time; OnEnqueue is told and Run gets it, and the job
// is busy until then.
func TestRequeueKeepsTheRun(t *testing.T) {
	rec := newRecorder()
	h := newHarness(t, func(o *schedule.Options) {
		rec.wire(o)
		o.MaxConcurrent = 1 // one at a time: they run in queue order
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}, {Name: "db", Spec: "@daily"}}))

	was := schedule.QueuedRun{ID: "0123456789abcdef", Name: "db", Trigger: schedule.TriggerSchedule, QueuedAt: ref.Add(-time.Hour)}
	q, err := h.s.Requeue(was)
	require.NoError(t, err)
	require.Equal(t, was, q)
	got, ok := rec.announced(was.ID)
	require.True(t, ok, "OnEnqueue is told before Requeue returns")
	require.Equal(t, was, got)
	busy, err := h.s.Queue("db", "")
	require.ErrorIs(t, err, schedule.ErrBusy)
	require.Equal(t, was, busy, "the busy answer names the requeued run")

	_, err = h.s.Requeue(schedule.QueuedRun{ID: "fedcba9876543210", Name: "gone", Trigger: "manual"})
	require.ErrorIs(t, err, schedule.ErrUnknownJob)
	_, err = h.s.Requeue(schedule.QueuedRun{Name: "net"})
	require.Error(t, err, "an id is required")

	// Without a queue time, it is queued now.
	q, err = h.s.Requeue(schedule.QueuedRun{ID: "00000000000000aa", Name: "net"})
	require.NoError(t, err)
	require.Equal(t, schedule.QueuedRun{ID: "00000000000000aa", Name: "net", Trigger: schedule.TriggerManual, QueuedAt: ref}, q)

	h.start()
	c := h.next()
	require.Equal(t, call{name: "db", trigger: schedule.TriggerSchedule, id: was.ID, at: ref}, c, "in queue order")
	c = h.next()
	require.Equal(t, "00000000000000aa", c.id)
	h.idle()
}
