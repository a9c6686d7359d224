package schedule_test

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

var errCancelTest = errors.New("cancelled by the test")

// recorder collects what OnEnqueue and OnDrop were told, in order.
type recorder struct {
	mu      sync.Mutex
	events  []string // "enqueue <id>", "drop <id>"
	queued  map[string]schedule.QueuedRun
	dropped chan schedule.QueuedRun
}

func newRecorder() *recorder {
	return &recorder{queued: map[string]schedule.QueuedRun{}, dropped: make(chan schedule.QueuedRun, 100)}
}

func (r *recorder) wire(o *schedule.Options) {
	o.OnEnqueue = func(q schedule.QueuedRun) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, "enqueue "+q.ID)
		r.queued[q.ID] = q
	}
	o.OnDrop = func(q schedule.QueuedRun) {
		r.mu.Lock()
		r.events = append(r.events, "drop "+q.ID)
		r.mu.Unlock()
		r.dropped <- q
	}
}

func (r *recorder) announced(id string) (schedule.QueuedRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q, ok := r.queued[id]
	return q, ok
}

var runIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestQueuedRunsHaveIDs(t *testing.T) {
	rec := newRecorder()
	h := newHarness(t, func(o *schedule.Options) {
		rec.wire(o)
		inner := o.Run
		o.Run = func(ctx context.Context, r schedule.QueuedRun) {
			_, ok := rec.announced(r.ID)
			require.True(t, ok, "run %s started before OnEnqueue was told", r.ID)
			inner(ctx, r)
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "net", Spec: "@hourly"}, {Name: "db", Spec: "@daily"}}))
	h.start()

	q, err := h.s.Queue("db", "")
	require.NoError(t, err)
	require.Regexp(t, runIDPattern, q.ID)
	require.Equal(t, schedule.QueuedRun{ID: q.ID, Name: "db", Trigger: schedule.TriggerManual, QueuedAt: ref}, q)
	got, ok := rec.announced(q.ID)
	require.True(t, ok, "Queue returned before OnEnqueue was told")
	require.Equal(t, q, got)
	c := h.next()
	require.Equal(t, call{name: "db", trigger: schedule.TriggerManual, id: q.ID, at: ref}, c)

	h.set(ref.Add(time.Hour))
	c = h.next()
	require.Equal(t, "net", c.name)
	require.Equal(t, schedule.TriggerSchedule, c.trigger)
	require.Regexp(t, runIDPattern, c.id)
	require.NotEqual(t, q.ID, c.id)
	got, ok = rec.announced(c.id)
	require.True(t, ok, "a scheduled run is announced too")
	require.Equal(t, schedule.QueuedRun{ID: c.id, Name: "net", Trigger: schedule.TriggerSchedule, QueuedAt: ref.Add(time.Hour)}, got)
	h.idle()
}

func TestCancelQueuedRun(t *testing.T) {
	rec := newRecorder()
	h := newHarness(t, func(o *schedule.Options) {
		o.MaxConcurrent = 1
		rec.wire(o)
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "slow", Spec: "@daily"}, {Name: "waiting", Spec: "@daily"}}))
	h.blockJobs("slow")
	h.start()
	slow, err := h.s.Queue("slow", "")
	require.NoError(t, err)
	require.Equal(t, slow.ID, h.next().id)
	waiting, err := h.s.Queue("waiting", "")
	require.NoError(t, err)
	require.Equal(t, schedule.Stats{Queued: 1, Active: 1}, h.s.Stats())

	got, queued, err := h.s.Cancel(waiting.ID, errCancelTest)
	require.NoError(t, err)
	require.True(t, queued)
	require.Equal(t, waiting, got)
	require.Equal(t, schedule.Stats{Queued: 0, Active: 1}, h.s.Stats())
	_, _, err = h.s.Cancel(waiting.ID, errCancelTest)
	require.ErrorIs(t, err, schedule.ErrNoSuchRun, "cancelled already")

	h.release("slow")
	h.idle() // "waiting" never ran
	select {
	case q := <-rec.dropped:
		t.Fatalf("a cancelled run is not reported dropped: %+v", q)
	default:
	}

	// The job is free again: a new run with a new id.
	again, err := h.s.Queue("waiting", "")
	require.NoError(t, err)
	require.NotEqual(t, waiting.ID, again.ID)
	require.Equal(t, again.ID, h.next().id)
	h.idle()
}

func TestCancelRunningRun(t *testing.T) {
	causes := make(chan error, 1)
	h := newHarness(t, func(o *schedule.Options) {
		o.Run = func(ctx context.Context, r schedule.QueuedRun) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}}))
	h.start()
	q, err := h.s.Queue("net", "")
	require.NoError(t, err)
	h.waitStats(func(st schedule.Stats) bool { return st.Active == 1 })

	got, queued, err := h.s.Cancel(q.ID, errCancelTest)
	require.NoError(t, err)
	require.False(t, queued)
	require.Equal(t, q, got)
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, errCancelTest)
	case <-time.After(waitLimit):
		t.Fatal("the running run's ctx was not cancelled")
	}
	h.waitStats(func(st schedule.Stats) bool { return st.Active == 0 })
	_, _, err = h.s.Cancel(q.ID, errCancelTest)
	require.ErrorIs(t, err, schedule.ErrNoSuchRun, "finished")
	_, _, err = h.s.Cancel("never-queued", errCancelTest)
	require.ErrorIs(t, err, schedule.ErrNoSuchRun)
}

// A cancel racing the dispatch of the run it names: either the run is
// taken out of the queue and never runs, or it runs with its ctx
// cancelled; never both, never neither, never a run that is not told.
func TestCancelRacesDispatch(t *testing.T) {
	type outcome struct {
		id    string
		cause error
	}
	ran := make(chan outcome, 1)
	h := newHarness(t, func(o *schedule.Options) {
		o.MaxConcurrent = 1
		o.Run = func(ctx context.Context, r schedule.QueuedRun) {
			<-ctx.Done() // every run of this test is cancelled
			ran <- outcome{r.ID, context.Cause(ctx)}
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}}))
	h.start()
	var sawQueued, sawRunning int
	for i := 0; i < 2000 && (i < 100 || sawQueued == 0 || sawRunning == 0); i++ {
		q, err := h.s.Queue("net", "")
		require.NoError(t, err)
		for range i % 20 { // let the loop get closer to (or past) dispatching it
			runtime.Gosched()
		}
		_, queued, err := h.s.Cancel(q.ID, errCancelTest)
		require.NoError(t, err, "the run is queued or running: Cancel must find it")
		if queued {
			sawQueued++
			h.waitStats(func(st schedule.Stats) bool { return st.Active == 0 && st.Queued == 0 })
			select {
			case o := <-ran:
				t.Fatalf("run %s ran although Cancel took it out of the queue", o.id)
			default:
			}
			continue
		}
		sawRunning++
		select {
		case o := <-ran:
			require.Equal(t, q.ID, o.id)
			require.ErrorIs(t, o.cause, errCancelTest)
		case <-time.After(waitLimit):
			t.Fatal("a run cancelled while dispatched never returned")
		}
		h.waitStats(func(st schedule.Stats) bool { return st.Active == 0 })
	}
	t.Logf("cancelled while queued: %d, while dispatched: %d", sawQueued, sawRunning)
	require.Positive(t, sawQueued, "the race was never lost by the dispatcher: the test proves nothing")
	require.Positive(t, sawRunning, "the race was never won by the dispatcher: the test proves nothing")
}

// Cancel can remove a run while OnEnqueue is still being told about it:
// the run is then never listed and never runs.
func TestCancelDuringOnEnqueue(t *testing.T) {
	announcing := make(chan schedule.QueuedRun)
	proceed := make(chan struct{})
	h := newHarness(t, func(o *schedule.Options) {
		o.OnEnqueue = func(q schedule.QueuedRun) {
			announcing <- q
			<-proceed
		}
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}}))
	h.start()
	type queueResult struct {
		q   schedule.QueuedRun
		err error
	}
	queuedRun := make(chan queueResult, 1)
	go func() {
		q, err := h.s.Queue("net", "")
		queuedRun <- queueResult{q, err}
	}()
	q := <-announcing
	_, err := h.s.Queue("net", "")
	require.ErrorIs(t, err, schedule.ErrBusy, "reserved while it is announced")
	_, queued, err := h.s.Cancel(q.ID, errCancelTest)
	require.NoError(t, err)
	require.True(t, queued)
	close(proceed)
	first := <-queuedRun
	require.NoError(t, first.err)
	require.Equal(t, q, first.q)
	h.idle()
}

func TestRemovedJobDropsQueuedRun(t *testing.T) {
	rec := newRecorder()
	h := newHarness(t, func(o *schedule.Options) {
		o.MaxConcurrent = 1
		rec.wire(o)
	})
	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "slow", Spec: "@daily"}, {Name: "gone", Spec: "@daily"}}))
	h.blockJobs("slow")
	h.start()
	_, err := h.s.Queue("slow", "")
	require.NoError(t, err)
	h.next()
	gone, err := h.s.Queue("gone", "")
	require.NoError(t, err)

	require.NoError(t, h.s.SetJobs([]schedule.Job{{Name: "slow", Spec: "@daily"}}))
	select {
	case q := <-rec.dropped:
		require.Equal(t, gone, q)
	case <-time.After(waitLimit):
		t.Fatal("OnDrop was not told")
	}
	rec.mu.Lock()
	require.Equal(t, []string{"enqueue " + gone.ID, "drop " + gone.ID}, rec.events[1:])
	rec.mu.Unlock()
	_, _, err = h.s.Cancel(gone.ID, errCancelTest)
	require.ErrorIs(t, err, schedule.ErrNoSuchRun)
	h.release("slow")
	h.idle()
}
