package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

func acct(key string, maxRuns int) []schedule.Group {
	return []schedule.Group{{Key: key, Max: maxRuns, Backoff: 10 * time.Second, BackoffMax: 40 * time.Second}}
}

// A group runs at most Max of its jobs at once, even with room under the
// global cap; the runs queued behind a full group's go ahead.
func TestGroupCap(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "a1", Spec: "@yearly", Groups: acct("account=1", 1)},
		{Name: "a2", Spec: "@yearly", Groups: acct("account=1", 1)},
		{Name: "a3", Spec: "@yearly", Groups: acct("account=1", 1)},
		{Name: "b1", Spec: "@yearly", Groups: acct("account=2", 1)},
		{Name: "free", Spec: "@yearly"},
	}))
	h.blockJobs("a1", "a2", "a3", "b1", "free")
	h.start()
	for _, n := range []string{"a1", "a2", "a3", "b1", "free"} {
		require.NoError(t, h.s.Trigger(n, ""))
	}
	require.ElementsMatch(t, []string{"a1", "b1", "free"}, names(h.nextN(3)))
	st := h.waitStats(func(st schedule.Stats) bool { return st.Active == 3 })
	require.Equal(t, 2, st.Queued, "a2 and a3 wait for their group, with room under the global cap of 4")

	h.release("a1")
	require.Equal(t, "a2", h.next().name, "a finished run of the group lets the next one start")
	h.release("a2")
	require.Equal(t, "a3", h.next().name)
	h.release("a3")
	h.release("b1")
	h.release("free")
	h.idle()
	total, _ := h.maxes()
	require.Equal(t, 3, total)
}

// A throttled run holds its whole group for the backoff, and queues its
// job again: the group's runs wait until the hold ends, other groups run
// meanwhile, and the backoff doubles while the group stays throttled.
func TestGroupThrottleHoldsTheGroup(t *testing.T) {
	var h *harness
	throttled := map[string]int{"a1": 2} // a1's first two runs are throttled
	holds := make(chan []schedule.GroupHold, 10)
	h = newHarness(t, func(o *schedule.Options) {
		o.Run = func(ctx context.Context, r schedule.QueuedRun) {
			h.run(ctx, r)
			h.mu.Lock()
			n := throttled[r.Name]
			throttled[r.Name] = n - 1
			h.mu.Unlock()
			if n > 0 {
				holds <- h.s.Throttle(r.Name)
			} else {
				h.s.Unthrottled(r.Name)
			}
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "a1", Spec: "@yearly", Groups: acct("account=1", 2)},
		{Name: "a2", Spec: "@yearly", Groups: acct("account=1", 2)},
		{Name: "b1", Spec: "@yearly", Groups: acct("account=2", 2)},
	}))
	h.start()
	t0 := h.clock.Now()

	require.NoError(t, h.s.Trigger("a1", ""))
	require.Equal(t, "a1", h.next().name)
	hold := <-holds
	require.Len(t, hold, 1)
	require.Equal(t, "account=1", hold[0].Key)
	require.Equal(t, 1, hold[0].Streak)
	first := hold[0].Until.Sub(t0)
	require.GreaterOrEqual(t, first, 8*time.Second, "the first backoff, less a fifth at most")
	require.LessOrEqual(t, first, 12*time.Second)
	require.Equal(t, hold, h.s.Holds())
	require.Equal(t, hold, h.s.Held("a2"), "a job of the group is held")
	require.Empty(t, h.s.Held("b1"), "another group's is not")

	h.waitStats(func(st schedule.Stats) bool { return st.Queued == 1 }) // a1 again, as a retry
	require.NoError(t, h.s.Trigger("a2", ""))
	require.NoError(t, h.s.Trigger("b1", ""))
	require.Equal(t, "b1", h.next().name, "another group is not held")
	h.waitStats(func(st schedule.Stats) bool { return st.Active == 0 && st.Queued == 2 })
	h.advance(first - time.Second)
	select {
	case c := <-h.calls:
		t.Fatalf("%s started while its group is held", c.name)
	default:
	}

	h.blockJobs("a2") // until a1 is throttled again: a run that is not ends the backoff
	h.advance(time.Second)
	var started []string
	for _, c := range h.nextN(2) {
		started = append(started, c.name+" "+c.trigger)
	}
	require.ElementsMatch(t, []string{"a1 " + schedule.TriggerRetry, "a2 manual"}, started,
		"the hold ends: the throttled job again, and the group's other run")
	hold = <-holds // a1 throttled again: twice the backoff
	require.Equal(t, 2, hold[0].Streak)
	second := hold[0].Until.Sub(h.clock.Now())
	require.GreaterOrEqual(t, second, 16*time.Second)
	require.LessOrEqual(t, second, 24*time.Second)
	h.release("a2")

	h.advance(second)
	require.Equal(t, "a1", h.next().name)
	h.idle()
	require.Empty(t, h.s.Holds(), "a run that is not throttled ends the backoff")
}

func TestGroupValidation(t *testing.T) {
	h := newHarness(t, nil)
	err := h.s.SetJobs([]schedule.Job{{Name: "a", Spec: "@hourly", Groups: []schedule.Group{{Key: "account=1", Max: 0, Backoff: time.Second, BackoffMax: time.Second}}}})
	require.ErrorContains(t, err, `job "a": group "account=1": want a key, Max >= 1`)
}
