package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// TestOnCycle: every turn of the loop reports its time, at start, when a
// slot is due and when nothing is (the loop wakes at least once a minute),
// so a stale report means the loop is stuck or stopped.
func TestOnCycle(t *testing.T) {
	cycles := make(chan time.Time, 100)
	h := newHarness(t, func(o *schedule.Options) {
		o.OnCycle = func(now time.Time) { cycles <- now }
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "hourly", Spec: "@hourly"}}))
	// waitCycle waits for a cycle at want; the loop may turn more than
	// once at one instant (a wake-up from SetJobs), never ahead of the clock.
	waitCycle := func(want time.Time) {
		t.Helper()
		for {
			select {
			case c := <-cycles:
				require.False(t, c.After(want), "cycle at %s, clock at %s", c, want)
				if c.Equal(want) {
					return
				}
			case <-time.After(waitLimit):
				t.Fatalf("no scheduling cycle at %s", want)
			}
		}
	}
	h.start()
	waitCycle(ref)

	// Nothing due for an hour: the loop still turns every minute.
	h.advance(time.Minute)
	waitCycle(ref.Add(time.Minute))
	h.advance(time.Minute)
	waitCycle(ref.Add(2 * time.Minute))

	// A due slot: its run starts from the cycle that reports it.
	slot := ref.Truncate(time.Hour).Add(time.Hour)
	h.set(slot)
	waitCycle(slot)
	require.Equal(t, "hourly", h.next().name)
}
