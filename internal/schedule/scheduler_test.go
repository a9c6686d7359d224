package schedule_test

import (
	"context"
	"encoding/json"
	"fmt"
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

func TestConcurrencyCapHolds(t *testing.T) {
	var qmu sync.Mutex
	var maxQueued, maxActive int
	h := newHarness(t, func(o *schedule.Options) {
		o.MaxConcurrent = 3
		o.OnQueue = func(queued, active int) {
			qmu.Lock()
			defer qmu.Unlock()
			maxQueued, maxActive = max(maxQueued, queued), max(maxActive, active)
		}
	})
	var jobs []schedule.Job
	var all []string
	for i := range 20 {
		name := fmt.Sprintf("ws-%02d", i)
		jobs = append(jobs, schedule.Job{Name: name, Spec: "@hourly"})
		all = append(all, name)
	}
	h.blockJobs(all...)
	require.NoError(t, h.s.SetJobs(jobs))
	h.start()

	h.set(ref.Add(time.Hour))
	first := h.nextN(3)
	require.ElementsMatch(t, all[:3], names(first), "dispatched in FIFO order; started concurrently")
	st := h.waitStats(func(st schedule.Stats) bool { return st.Active == 3 })
	require.Equal(t, schedule.Stats{Queued: 17, Active: 3}, st)
	select {
	case c := <-h.calls:
		t.Fatalf("fourth run %q started above the cap", c.name)
	default:
	}

	// Release one at a time: each release starts exactly the next queued job.
	order := append([]string(nil), all[:3]...)
	for i := range 20 {
		h.release(all[i])
		if i+3 < 20 {
			order = append(order, h.next().name)
		}
	}
	h.idle()
	require.Equal(t, all, order, "queue is FIFO")
	total, perJob := h.maxes()
	require.Equal(t, 3, total, "most simultaneous runs")
	require.Equal(t, 1, perJob)
	qmu.Lock()
	require.Equal(t, 17, maxQueued)
	require.Equal(t, 3, maxActive)
	qmu.Unlock()
}

func TestConcurrencyCapUnderLoad(t *testing.T) {
	// 20 jobs that all finish on their own, every minute for an hour: the
	// cap must hold while runs end and start concurrently.
	h := newHarness(t, func(o *schedule.Options) { o.MaxConcurrent = 3 })
	var jobs []schedule.Job
	for i := range 20 {
		jobs = append(jobs, schedule.Job{Name: fmt.Sprintf("ws-%02d", i), Spec: "* * * * *"})
	}
	require.NoError(t, h.s.SetJobs(jobs))
	h.start()
	for range 60 {
		h.advance(time.Minute)
		h.nextN(20)
		h.idle()
	}
	total, perJob := h.maxes()
	require.LessOrEqual(t, total, 3)
	require.Equal(t, 1, perJob)
	require.Zero(t, h.s.Stats().Skipped)
}

func TestOverlapSkippedAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	h.blockJobs("slow")
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "slow", Spec: "* * * * *"}}))
	h.start()

	h.advance(time.Minute)
	require.Equal(t, ref.Add(time.Minute), h.next().at)
	for i := 1; i <= 3; i++ {
		h.advance(time.Minute)
		require.Equal(t, "slow", <-h.skips)
		require.Equal(t, uint64(i), h.s.Stats().Skipped)
	}
	require.Equal(t, 1, h.s.Stats().Active)

	h.release("slow")
	h.idle() // the skipped slots are not run after the fact
	h.advance(time.Minute)
	require.Equal(t, ref.Add(5*time.Minute), h.next().at)
	h.idle()
	require.Equal(t, uint64(3), h.s.Stats().Skipped)
	_, perJob := h.maxes()
	require.Equal(t, 1, perJob)
}

func TestOverlapWhileQueued(t *testing.T) {
	// A slot that comes while the job waits behind the cap is skipped too.
	h := newHarness(t, func(o *schedule.Options) { o.MaxConcurrent = 1 })
	h.blockJobs("hog")
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "hog", Spec: "0 12 * * *"},
		{Name: "minutely", Spec: "* * * * *"},
	}))
	h.start()
	require.NoError(t, h.s.Trigger("hog", ""))
	require.Equal(t, "hog", h.next().name)

	h.advance(time.Minute) // minutely queued
	h.advance(time.Minute) // minutely skipped: still queued
	require.Equal(t, "minutely", <-h.skips)
	require.Equal(t, schedule.Stats{Queued: 1, Active: 1, Skipped: 1}, h.s.Stats())

	h.release("hog")
	require.Equal(t, call{name: "minutely", trigger: schedule.TriggerSchedule, at: ref.Add(2 * time.Minute)}, h.next().withoutID())
	h.idle()
}

func TestTrigger(t *testing.T) {
	h := newHarness(t, func(o *schedule.Options) { o.MaxConcurrent = 1 })
	h.blockJobs("a", "b")
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "a", Spec: "@daily"},
		{Name: "b", Spec: "@daily"},
		{Name: "c", Spec: "@daily"},
	}))

	// Before Run, a trigger is accepted and waits in the queue.
	require.NoError(t, h.s.Trigger("a", "manual"))
	require.Equal(t, schedule.Stats{Queued: 1}, h.s.Stats())
	h.start()
	require.Equal(t, call{name: "a", trigger: "manual", at: ref}, h.next().withoutID())

	require.NoError(t, h.s.Trigger("b", "")) // empty means manual
	require.Equal(t, schedule.Stats{Queued: 1, Active: 1}, h.waitStats(func(st schedule.Stats) bool { return st.Queued == 1 }))

	err := h.s.Trigger("a", "manual")
	require.ErrorIs(t, err, schedule.ErrBusy, "running")
	require.EqualError(t, err, `job "a": job is already queued or running`)
	require.ErrorIs(t, h.s.Trigger("b", "manual"), schedule.ErrBusy, "queued")
	err = h.s.Trigger("nope", "manual")
	require.ErrorIs(t, err, schedule.ErrUnknownJob)
	require.EqualError(t, err, `job "nope": unknown job`)

	require.NoError(t, h.s.Trigger("c", "api"))
	h.release("a")
	require.Equal(t, call{name: "b", trigger: schedule.TriggerManual, at: ref}, h.next().withoutID())
	h.release("b")
	require.Equal(t, call{name: "c", trigger: "api", at: ref}, h.next().withoutID())
	h.idle()
	total, _ := h.maxes()
	require.Equal(t, 1, total)

	// Idle again: a can be triggered again.
	require.NoError(t, h.s.Trigger("c", "manual"))
	require.Equal(t, "c", h.next().name)
	h.idle()
}

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

func TestStableFIFOOrder(t *testing.T) {
	h := newHarness(t, func(o *schedule.Options) { o.MaxConcurrent = 1 })
	h.blockJobs("blocker")
	require.NoError(t, h.s.SetJobs([]schedule.Job{
		{Name: "blocker", Spec: "1 10 * * *"}, // 10:01
		{Name: "e1", Spec: "3 10 * * *"},      // 10:03
		{Name: "tie-b", Spec: "5 10 * * *"},   // 10:05, earlier in SetJobs
		{Name: "e2", Spec: "2 10 * * *"},      // 10:02
		{Name: "tie-a", Spec: "5 10 * * *"},   // 10:05
		{Name: "e3", Spec: "4 10 * * *"},      // 10:04
		{Name: "x", Spec: "@daily"},
		{Name: "y", Spec: "@daily"},
	}))
	h.start()
	h.advance(time.Minute)
	require.Equal(t, "blocker", h.next().name)
	require.NoError(t, h.s.Trigger("y", "")) // queued before the slots below come due

	h.advance(5 * time.Minute) // 10:06: five slots due at once, handled oldest first
	require.NoError(t, h.s.Trigger("x", ""))
	require.Equal(t, 7, h.s.Stats().Queued)
	h.release("blocker")
	got := h.nextN(7)
	require.Equal(t, []string{"y", "e2", "e1", "e3", "tie-b", "tie-a", "x"}, names(got))
	h.idle()
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

func TestOnQueueNeverCalledWithStaleZeroes(t *testing.T) {
	// OnQueue reports every change, in order: the last call matches Stats.
	var mu sync.Mutex
	var last [2]int
	h := newHarness(t, func(o *schedule.Options) {
		o.MaxConcurrent = 2
		o.OnQueue = func(q, a int) { mu.Lock(); last = [2]int{q, a}; mu.Unlock() }
	})
	h.blockJobs("a", "b", "c")
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "a", Spec: "@hourly"}, {Name: "b", Spec: "@hourly"}, {Name: "c", Spec: "@hourly"}}))
	h.start()
	h.advance(time.Hour)
	h.nextN(2)
	mu.Lock()
	require.Equal(t, [2]int{1, 2}, last)
	mu.Unlock()
	for _, n := range []string{"a", "b"} {
		h.release(n)
	}
	h.next()
	h.release("c")
	h.idle()
	mu.Lock()
	require.Equal(t, [2]int{0, 0}, last)
	mu.Unlock()
}
