package schedule_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

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
