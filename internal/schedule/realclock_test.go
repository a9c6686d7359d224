package schedule_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// TestRealClock proves the real timers fire: two "@every 1s" jobs on the
// wall clock must each run twice, one second apart, within about 2 s.
func TestRealClock(t *testing.T) {
	var mu sync.Mutex
	runs := map[string][]time.Time{}
	done := make(chan struct{})
	s, err := schedule.New(schedule.Options{
		MaxConcurrent:  2,
		AllowSubMinute: true,
		Logger:         discard(),
		Run: func(_ context.Context, r schedule.QueuedRun) {
			name := r.Name
			mu.Lock()
			defer mu.Unlock()
			runs[name] = append(runs[name], time.Now())
			if len(runs["a"]) >= 2 && len(runs["b"]) >= 2 {
				select {
				case <-done:
				default:
					close(done)
				}
			}
		},
	})
	require.NoError(t, err)
	require.NoError(t, s.SetJobs([]schedule.Job{{Name: "a", Spec: "@every 1s"}, {Name: "b", Spec: "@every 1s"}}))
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()

	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("real timers did not fire twice per job within 3 s")
	}
	cancel()
	require.NoError(t, <-ran)

	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"a", "b"} {
		gap := runs[name][1].Sub(runs[name][0])
		require.InDelta(t, float64(time.Second), float64(gap), float64(300*time.Millisecond), "%s: runs %s apart", name, gap)
	}
}
