package schedule_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/schedule/scheduletest"
)

// waitLimit bounds every wait on the scheduler's goroutines; it is a
// deadlock guard, not a sleep: the waits return as soon as the condition
// holds.
const waitLimit = 5 * time.Second

// call is one invocation of Options.Run.
type call struct {
	name, trigger, id string
	at                time.Time // fake time when the run started
}

// withoutID is c with the (random) run id blanked, for comparisons.
func (c call) withoutID() call {
	c.id = ""
	return c
}

// harness is a Scheduler on a FakeClock whose Run records calls and, for
// jobs listed in block, waits until the test releases them.
type harness struct {
	t     *testing.T
	clock *scheduletest.FakeClock
	s     *schedule.Scheduler
	calls chan call

	mu       sync.Mutex
	block    map[string]chan struct{} // job -> release channel
	running  map[string]int
	maxTotal int // most runs seen at once
	maxPer   int // most runs of one job seen at once
	total    int

	skips chan string
}

func newHarness(t *testing.T, mod func(*schedule.Options)) *harness {
	t.Helper()
	return newHarnessAt(t, ref, mod)
}

// newHarnessAt is newHarness with the fake clock starting at start.
func newHarnessAt(t *testing.T, start time.Time, mod func(*schedule.Options)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clock:   scheduletest.NewFakeClock(start),
		calls:   make(chan call, 10000),
		block:   map[string]chan struct{}{},
		running: map[string]int{},
		skips:   make(chan string, 10000),
	}
	o := schedule.Options{
		MaxConcurrent: 4,
		Clock:         h.clock,
		Location:      time.UTC,
		Logger:        discard(),
		Run:           h.run,
		OnSkip:        func(name string) { h.skips <- name },
	}
	if mod != nil {
		mod(&o)
	}
	s, err := schedule.New(o)
	require.NoError(t, err)
	h.s = s
	return h
}

func (h *harness) run(ctx context.Context, r schedule.QueuedRun) {
	name, trigger := r.Name, r.Trigger
	h.mu.Lock()
	h.running[name]++
	h.total++
	h.maxPer = max(h.maxPer, h.running[name])
	n := 0
	for _, c := range h.running {
		n += c
	}
	h.maxTotal = max(h.maxTotal, n)
	release := h.block[name]
	h.mu.Unlock()

	h.calls <- call{name: name, trigger: trigger, id: r.ID, at: h.clock.Now()}
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}

	h.mu.Lock()
	h.running[name]--
	h.mu.Unlock()
}

// blockJobs makes runs of the named jobs wait for release (or cancellation).
func (h *harness) blockJobs(names ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range names {
		h.block[n] = make(chan struct{})
	}
}

func (h *harness) release(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.block[name])
	delete(h.block, name)
}

func (h *harness) maxes() (total, perJob int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxTotal, h.maxPer
}

// start runs the scheduler until the test ends, waits for its loop to be
// asleep, and returns a cancel func and the channel Run's result arrives on.
func (h *harness) start() (context.CancelFunc, <-chan error) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(h.t.Context())
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		done <- h.s.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(waitLimit):
			h.t.Error("Run did not return after cancel")
		}
	})
	h.settle()
	return cancel, done
}

// settle waits until the scheduler's loop has gone back to sleep on its
// timer, i.e. has handled everything due at the current fake time.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), waitLimit)
	defer cancel()
	require.NoError(h.t, h.clock.BlockUntilTimers(ctx, 1), "scheduler loop did not go back to sleep")
}

// set moves the fake clock to t and waits for the loop to handle it.
func (h *harness) set(t time.Time) {
	h.t.Helper()
	h.clock.Set(t)
	h.settle()
}

func (h *harness) advance(d time.Duration) { h.t.Helper(); h.set(h.clock.Now().Add(d)) }

// next returns the next Run call.
func (h *harness) next() call {
	h.t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(waitLimit):
		h.t.Fatal("timed out waiting for a run")
		return call{}
	}
}

// nextN returns the next n Run calls.
func (h *harness) nextN(n int) []call {
	h.t.Helper()
	out := make([]call, 0, n)
	for range n {
		out = append(out, h.next())
	}
	return out
}

// idle waits until nothing is queued or running and asserts that no run
// was started beyond those already received.
func (h *harness) idle() {
	h.t.Helper()
	h.waitStats(func(st schedule.Stats) bool { return st.Active == 0 && st.Queued == 0 })
	select {
	case c := <-h.calls:
		h.t.Fatalf("unexpected run %+v", c)
	default:
	}
}

// waitStats polls Stats until cond holds.
func (h *harness) waitStats(cond func(schedule.Stats) bool) schedule.Stats {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		st := h.s.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("stats never reached the expected state; last %+v", st)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func names(calls []call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.name
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a slog handler used from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
