package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

func TestSetJobs(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "every", Spec: "@every 1h"},
		{Name: "gone", Spec: "@daily"},
		{Name: "changed", Spec: "*/10 * * * *"},
	}))
	requireNext := func(name string, want time.Time) {
		t.Helper()
		got, ok := h.s.Next(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	requireNext("every", ref.Add(time.Hour))
	requireNext("gone", time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC))
	requireNext("changed", ref.Add(10*time.Minute))

	h.clock.Set(ref.Add(5 * time.Minute))
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "every", Spec: "@every 1h"},    // unchanged: keeps 11:00, not 11:05
		{Name: "changed", Spec: "0 12 * * *"}, // rescheduled
		{Name: "added", Spec: "@every 1h"},    // scheduled from now
	}))
	requireNext("every", ref.Add(time.Hour))
	requireNext("changed", ref.Add(2*time.Hour))
	requireNext("added", ref.Add(65*time.Minute))
	_, ok := h.s.Next("gone")
	require.False(t, ok)
	require.ErrorIs(t, h.s.Trigger("gone", ""), schedule.ErrUnknownJob)

	// An invalid set changes nothing.
	{
		err := h.s.SetJobs([]schedule.Job{
			{Name: "every", Spec: "@hourly"},
			{Name: "bad", Spec: "bogus"},
			{Name: "tz", Spec: "CRON_TZ=UTC"},
			{Name: "every", Spec: "@daily"},
			{Name: "", Spec: "@daily"},
		})
		require.Error(t, err)
		msg := err.Error()
		require.Contains(t, msg, `job "bad": schedule "bogus": expected exactly 5 fields`)
		require.Contains(t, msg, `job "tz": schedule "CRON_TZ=UTC": CRON_TZ= must be followed by a space and a schedule`)
		require.Contains(t, msg, `job "every": duplicate name`)
		require.Contains(t, msg, `jobs[4]: empty name`)
		require.NotContains(t, msg, `job "every": schedule`, "valid job reported as invalid")

		requireNext("every", ref.Add(time.Hour))
		requireNext("changed", ref.Add(2*time.Hour))
		requireNext("added", ref.Add(65*time.Minute))
		_, ok := h.s.Next("bad")
		require.False(t, ok)
	}

	// Removed jobs stop running.
	h.start()
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "every", Spec: "@every 1h"}}))
	h.set(ref.Add(3 * time.Hour))
	require.Equal(t, "every", h.next().name)
	h.idle()
}

func TestSetJobsWhileRunning(t *testing.T) {
	h := newHarness(t, func(o *schedule.Options) { o.MaxConcurrent = 1 })
	h.blockJobs("a", "b")
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "a", Spec: "* * * * *"},
		{Name: "b", Spec: "@daily"},
	}))
	h.start()
	h.advance(time.Minute)
	require.Equal(t, "a", h.next().name)
	require.NoError(t, h.s.Trigger("b", ""))

	// Remove both: the running run of a goes on, the queued b is dropped.
	require.NoError(t, h.s.SetJobs(nil))
	require.Equal(t, schedule.Stats{Active: 1}, h.s.Stats())
	require.ErrorIs(t, h.s.Trigger("a", ""), schedule.ErrUnknownJob)

	// Re-add a while its old run is still going: still one at a time.
	h.settle()
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "a", Spec: "* * * * *"}}))
	require.ErrorIs(t, h.s.Trigger("a", ""), schedule.ErrBusy)
	h.advance(time.Minute)
	require.Equal(t, "a", <-h.skips)

	h.release("a")
	h.idle() // b never ran
	h.advance(time.Minute)
	require.Equal(t, call{name: "a", trigger: schedule.TriggerSchedule, at: ref.Add(3 * time.Minute)}, h.next().withoutID())
	h.idle()
	_, perJob := h.maxes()
	require.Equal(t, 1, perJob)
}

func TestSetJobsRemoveRunningFinishes(t *testing.T) {
	finished := make(chan struct{})
	h := newHarness(t, nil)
	h.blockJobs("a")
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "a", Spec: "* * * * *"}}))
	h.start()
	h.advance(time.Minute)
	h.next()
	require.NoError(t, h.s.SetJobs(nil))
	go func() {
		h.waitStats(func(st schedule.Stats) bool { return st.Active == 0 })
		close(finished)
	}()
	h.release("a")
	<-finished
	h.advance(time.Minute)
	h.idle()
	_, ok := h.s.Next("a")
	require.False(t, ok)
}

func TestRemovedQueuedJobDoesNotRun(t *testing.T) {
	h := newHarness(t, func(o *schedule.Options) { o.MaxConcurrent = 1 })
	h.blockJobs("hog")
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "hog", Spec: "@daily"}, {Name: "victim", Spec: "@daily"}}))
	h.start()
	require.NoError(t, h.s.Trigger("hog", ""))
	h.next()
	require.NoError(t, h.s.Trigger("victim", ""))
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "hog", Spec: "@daily"}}))
	require.Equal(t, schedule.Stats{Active: 1}, h.s.Stats())
	h.release("hog")
	h.idle()
}
