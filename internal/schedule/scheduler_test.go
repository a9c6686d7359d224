package schedule_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

func TestNewValidates(t *testing.T) {
	run := func(context.Context, schedule.QueuedRun) {}
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		opts    schedule.Options
		wantErr []string
	}{
		{"ok", schedule.Options{MaxConcurrent: 1, Run: run, Logger: logger}, nil},
		{"missing run and logger", schedule.Options{MaxConcurrent: 1}, []string{
			"driftwatch/schedule: Options.Run is required",
			"driftwatch/schedule: Options.Logger is required",
		}},
		{"zero cap", schedule.Options{Run: run, Logger: logger}, []string{
			"driftwatch/schedule: Options.MaxConcurrent must be at least 1, got 0",
		}},
		{"negative jitter", schedule.Options{MaxConcurrent: 2, Jitter: -time.Second, Run: run, Logger: logger}, []string{
			"driftwatch/schedule: Options.Jitter must not be negative, got -1s",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := schedule.New(tt.opts)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.NotNil(t, s)
				return
			}
			require.Nil(t, s)
			require.EqualError(t, err, strings.Join(tt.wantErr, "\n"))
		})
	}
}

func TestDueJobsRun(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "half", Spec: "*/30 * * * *"},
		{Name: "hourly", Spec: "@hourly"},
	}))
	h.start()

	h.advance(29 * time.Minute)
	h.idle() // nothing due before 10:30

	h.advance(time.Minute)
	c := h.next()
	require.Equal(t, call{name: "half", trigger: schedule.TriggerSchedule, at: ref.Add(30 * time.Minute)}, c.withoutID())
	h.idle()

	h.advance(30 * time.Minute)
	got := h.nextN(2)
	// Both start at once (cap 4), so their Run calls may interleave.
	require.ElementsMatch(t, []string{"half", "hourly"}, names(got))
	h.idle()

	next, ok := h.s.Next("hourly")
	require.True(t, ok)
	require.Equal(t, ref.Add(2*time.Hour), next)
	require.Zero(t, h.s.Stats().Skipped)
}

func TestPanicRecovered(t *testing.T) {
	var logs syncBuffer
	var mu sync.Mutex
	calls := 0
	h := newHarness(t, func(o *schedule.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		inner := o.Run
		o.Run = func(ctx context.Context, r schedule.QueuedRun) {
			inner(ctx, r)
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				panic("boom")
			}
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "fragile", Spec: "* * * * *"}}))
	_, done := h.start()

	h.advance(time.Minute)
	h.next()
	h.idle()
	var rec map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m["msg"] == "run panicked" {
			rec = m
		}
	}
	require.NotNil(t, rec, "panic not logged:\n%s", logs.String())
	require.Equal(t, "ERROR", rec["level"])
	require.Equal(t, "fragile", rec["job"])
	require.Equal(t, "boom", rec["panic"])
	require.Contains(t, rec["stack"], "scheduler_test.go")

	// Still scheduled, and the scheduler is still running.
	h.advance(time.Minute)
	require.Equal(t, ref.Add(2*time.Minute), h.next().at)
	h.idle()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after a panic", err)
	default:
	}
}

func TestRunWaitsForRunningJobs(t *testing.T) {
	cancelled := make(chan struct{})
	finish := make(chan struct{})
	h := newHarness(t, func(o *schedule.Options) {
		o.MaxConcurrent = 1
		inner := o.Run
		o.Run = func(ctx context.Context, r schedule.QueuedRun) {
			inner(ctx, r)
			if r.Name == "long" {
				<-ctx.Done()
				close(cancelled)
				<-finish // cleanup takes a while, like terraform on SIGINT
			}
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "long", Spec: "@daily"},
		{Name: "queued", Spec: "@daily"},
	}))
	cancel, done := h.start()
	require.NoError(t, h.s.Trigger("long", ""))
	h.next()
	require.NoError(t, h.s.Trigger("queued", ""))

	cancel()
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Fatal("running job's ctx was not cancelled")
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while a job was still running", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(finish)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after the running job did")
	}
	// Dispatching stopped: the queued job did not start and is still queued.
	require.Equal(t, schedule.Stats{Queued: 1}, h.s.Stats())
	select {
	case c := <-h.calls:
		t.Fatalf("run %q started after cancel", c.name)
	default:
	}
}

func TestRunTwiceConcurrently(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	require.EqualError(t, h.s.Run(t.Context()), "driftwatch/schedule: Run is already running")
}

func TestRunAgainAfterReturn(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "a", Spec: "@daily"}}))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, h.s.Run(ctx))
	require.NoError(t, h.s.Trigger("a", ""))
	h.start()
	require.Equal(t, "a", h.next().name)
	h.idle()
}
