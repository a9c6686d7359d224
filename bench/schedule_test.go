package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/schedule/scheduletest"
)

// BenchmarkScheduler1000 measures internal/schedule's own overhead: 1,000
// jobs due every minute ("@every 1m" and "* * * * *", half each) with a 1m
// jitter, a Run that returns at once, MaxConcurrent 8, driven by a fake
// clock. One op is one simulated hour, about 60,000 dispatched runs. The
// clock jumps from one timer deadline to the next (about 3,600 steps an
// hour: jitter is whole seconds), waits for the scheduler's loop to go back
// to sleep and for the dispatched runs to return, so the time is scheduler
// work (heap, queue, goroutine hand-off, wake-ups) plus the fake clock's
// bookkeeping.
//
// Reported: ns/run and allocs/run (per dispatched run), runs/op,
// skipped/op (must be 0: nothing is slow here), and heap_bytes/job, the
// live heap SetJobs adds per job (parsed spec, entry, map and heap slots).
//
//	go test -run '^$' -bench Scheduler1000 -benchtime 5x ./bench
func BenchmarkScheduler1000(b *testing.B) {
	const (
		nJobs   = 1000
		maxConc = 8
	)
	start := time.Date(2026, time.January, 5, 10, 0, 0, 0, time.UTC)
	clk := scheduletest.NewFakeClock(start)
	var runs atomic.Int64
	s, err := schedule.New(schedule.Options{
		MaxConcurrent: maxConc,
		Jitter:        time.Minute,
		Clock:         clk,
		Location:      time.UTC,
		Logger:        slog.New(slog.DiscardHandler),
		Run:           func(context.Context, schedule.QueuedRun) { runs.Add(1) },
	})
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]schedule.Job, nJobs)
	for i := range jobs {
		spec := "@every 1m"
		if i%2 == 1 {
			spec = "* * * * *"
		}
		jobs[i] = schedule.Job{Name: fmt.Sprintf("team-%02d/workspace-%04d", i%17, i), Spec: spec}
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := s.SetJobs(jobs); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heapPerJob := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / nJobs

	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	wait, stop := context.WithTimeout(b.Context(), time.Minute)
	defer stop()
	if err := clk.BlockUntilTimers(wait, 1); err != nil {
		b.Fatal("scheduler loop never slept:", err)
	}

	b.ReportAllocs()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		end := clk.Now().Add(time.Hour)
		for clk.Now().Before(end) {
			if _, ok := clk.AdvanceToNext(); !ok {
				b.Fatal("no timer pending")
			}
			if err := clk.BlockUntilTimers(wait, 1); err != nil {
				b.Fatal("scheduler loop did not go back to sleep:", err)
			}
			// Let the runs finish before time moves on, as they would in
			// real time; otherwise fake time outruns the worker goroutines
			// and jobs still running a minute later skip their slot.
			for st := s.Stats(); st.Active > 0 || st.Queued > 0; st = s.Stats() {
				runtime.Gosched()
			}
		}
	}
	runtime.ReadMemStats(&after)

	n := float64(runs.Load())
	if n == 0 {
		b.Fatal("no runs dispatched")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/run")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/run")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/run")
	b.ReportMetric(n/float64(b.N), "runs/op")
	b.ReportMetric(float64(s.Stats().Skipped)/float64(b.N), "skipped/op")
	b.ReportMetric(heapPerJob, "heap_bytes/job")
}
