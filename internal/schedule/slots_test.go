package schedule_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

func TestJitterSpreadsHourlyJobs(t *testing.T) {
	h := newHarness(t, func(o *schedule.Options) { o.Jitter = time.Hour })
	var jobs []schedule.Job
	for i := range 1000 {
		jobs = append(jobs, schedule.Job{Name: fmt.Sprintf("team-%d/ws-%03d", i%7, i), Spec: "@hourly"})
	}
	require.NoError(t, h.s.SetJobs(jobs))

	perMinute := map[int]int{}
	slot := ref.Add(time.Hour) // the first @hourly slot after 10:00
	for _, j := range jobs {
		next, ok := h.s.Next(j.Name)
		require.True(t, ok)
		off := next.Sub(slot)
		require.GreaterOrEqual(t, off, time.Duration(0), j.Name)
		require.Less(t, off, time.Hour, j.Name)
		require.Equal(t, schedule.JitterOffset(j.Name, time.Hour), off)
		perMinute[next.Minute()]++
	}
	// 1000 jobs over 60 minutes is ~16.7 a minute.
	require.Less(t, perMinute[0], 50, "jobs bunched at :00")
	require.GreaterOrEqual(t, len(perMinute), 58, "minutes used")
	for m, n := range perMinute {
		require.Less(t, n, 40, "minute %d has %d jobs", m, n)
	}
}

func TestJitterIsAddedToEverySlot(t *testing.T) {
	h := newHarness(t, func(o *schedule.Options) { o.Jitter = 10 * time.Minute })
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "ws-prod", Spec: "@hourly"}}))
	off := schedule.JitterOffset("ws-prod", 10*time.Minute)
	require.Equal(t, 8*time.Minute+26*time.Second, off) // pinned, see TestJitterOffset
	h.start()
	for i := 1; i <= 3; i++ {
		next, ok := h.s.Next("ws-prod")
		require.True(t, ok)
		slot := ref.Add(time.Duration(i) * time.Hour)
		require.Equal(t, slot.Add(off), next)
		h.set(next)
		require.Equal(t, next, h.next().at)
		h.idle()
	}
}

func TestLateWakeDoesNotReplay(t *testing.T) {
	var logs syncBuffer
	h := newHarness(t, func(o *schedule.Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "m", Spec: "* * * * *"}}))
	h.start()
	// The host sleeps for an hour: one run, no catch-up, no skips.
	h.advance(time.Hour + 30*time.Second)
	require.Equal(t, ref.Add(time.Hour+30*time.Second), h.next().at)
	h.idle()
	require.Zero(t, h.s.Stats().Skipped)
	next, ok := h.s.Next("m")
	require.True(t, ok)
	require.Equal(t, ref.Add(61*time.Minute), next)
	require.Contains(t, logs.String(), "missed slots are not replayed")

	h.advance(30 * time.Second)
	require.Equal(t, ref.Add(61*time.Minute), h.next().at)
	h.idle()
}

// TestClockStepBackRunsNoSlotTwice: the wall clock steps back an hour (a
// bad time source corrected): no slot already handled runs again and
// nothing storms; the job waits for the clock to reach its next slot.
// (The fake clock's timers follow the fake wall clock, so the loop's
// one-minute wake-up and its warning are TestFaultsClockJump's, with real
// timers.)
func TestClockStepBackRunsNoSlotTwice(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "m", Spec: "* * * * *"}}))
	h.start()
	h.advance(time.Minute)
	require.Equal(t, ref.Add(time.Minute), h.next().at)
	h.idle()

	h.set(ref.Add(time.Minute - time.Hour))
	h.idle()
	next, ok := h.s.Next("m")
	require.True(t, ok)
	require.Equal(t, ref.Add(2*time.Minute), next, "the next slot stays the one after the last run")
	// The repeated hour runs nothing.
	for range 60 {
		h.advance(time.Minute)
		h.idle()
	}
	require.Zero(t, h.s.Stats().Skipped)
	h.advance(time.Minute)
	require.Equal(t, ref.Add(2*time.Minute), h.next().at)
	h.idle()
}
