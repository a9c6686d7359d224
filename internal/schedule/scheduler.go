package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
)

// Triggers passed to Options.Run.
const (
	TriggerSchedule = "schedule" // a slot of the job's schedule came due
	TriggerManual   = "manual"   // Trigger was called with an empty trigger
)

// maxSleep bounds how long the loop sleeps on one timer. Go timers measure
// monotonic time, which stops while the host is suspended and ignores wall
// clock steps; waking at least once a minute keeps slots on the wall clock.
const maxSleep = time.Minute

// clockStepBack is how far the wall clock must go back between two turns
// of the loop to be logged as a step back.
const clockStepBack = 5 * time.Second

var (
	// ErrUnknownJob is returned by Trigger for a name not in the current
	// job set: a refusal.ErrUnknownWorkspace (the API's 404).
	ErrUnknownJob = refusal.Kind("unknown job", refusal.ErrUnknownWorkspace)
	// ErrBusy is returned by Trigger when the job is already queued or
	// running: a refusal.ErrBusy (the API's 409).
	ErrBusy = refusal.Kind("job is already queued or running", refusal.ErrBusy)
	// ErrNoSuchRun is returned by Cancel for a run id that is neither
	// queued nor running.
	ErrNoSuchRun = errors.New("no queued or running run has this id")
	// errLooping is returned by a second concurrent Run.
	errLooping = errors.New("driftwatch/schedule: Run is already running")
)

// Job is one scheduled unit of work: in driftwatch, one workspace.
type Job struct {
	Name string // unique; passed to Options.Run and used for jitter
	Spec string // see ParseSpec
	// Groups are the concurrency groups the job is in (groups.go): a run
	// starts only when each has room and none is held.
	Groups []Group
}

// QueuedRun is one run of a job, from the moment it is queued: its id is
// assigned then (drift.NewRunID), so it can be named (and cancelled) before it
// starts.
type QueuedRun struct {
	ID       string
	Name     string    // the job's
	Trigger  string    // TriggerSchedule or what Queue was given
	QueuedAt time.Time // from the scheduler's clock
}

// Options configures a Scheduler. Run and Logger are required.
type Options struct {
	// MaxConcurrent is the global cap on simultaneously running jobs (>= 1).
	MaxConcurrent int
	// Jitter is the size of the window job offsets are spread over: each
	// slot of a job runs hash(name) mod Jitter after the slot (see doc.go).
	// Zero disables jitter.
	Jitter time.Duration
	// Clock defaults to RealClock.
	Clock Clock
	// Location is where specs without a CRON_TZ= prefix are evaluated.
	// It defaults to time.Local.
	Location *time.Location
	// AllowSubMinute lets "@every" go down to one second. For tests.
	AllowSubMinute bool
	// Logger receives panics at error level, missed slots at warn level and
	// schedule changes and runs at info and debug level.
	Logger *slog.Logger

	// Run executes one run and blocks until it is done. ctx is cancelled
	// when the Scheduler's Run is stopped, or with the given cause when
	// Cancel names the run; Run should then return promptly. A panic is
	// recovered and logged.
	Run func(ctx context.Context, r QueuedRun)
	// OnEnqueue, if set, is told every run that is queued, before the run
	// can start or be dropped (Run, OnDrop) and before Queue returns. It is
	// called without the scheduler's lock, so it may do I/O (record the
	// queued run), but the job's queue position waits for it. Cancel can
	// remove the run while OnEnqueue is still running.
	OnEnqueue func(r QueuedRun)
	// OnDrop, if set, is told a queued run that SetJobs dropped because its
	// job was removed. It is called without the lock, after OnEnqueue.
	OnDrop func(r QueuedRun)
	// OnSkip, if set, is called when a slot comes while the job is still
	// queued or running; that slot is dropped.
	OnSkip func(name string)
	// OnQueue, if set, is called with the queue depth and the number of
	// running jobs whenever either changes.
	//
	// OnSkip and OnQueue are called with the scheduler's lock held, in the
	// order the changes happen: they must be quick (set a gauge, bump a
	// counter) and must not call the Scheduler.
	OnQueue func(queued, active int)
	// OnCycle, if set, is called with the loop's time each time Run
	// completes a scheduling cycle: due slots handled, queued runs started
	// as far as the cap allows, OnEnqueue and OnDrop returned. The loop
	// wakes at least once a minute, so a cycle older than that means the
	// loop is stuck (a hung OnEnqueue) or not running. It is called without
	// the lock, from Run's goroutine; it must be quick (set a gauge).
	OnCycle func(now time.Time)
}

// Stats is a snapshot of the scheduler's counters.
type Stats struct {
	Queued  int    // jobs waiting for a concurrency slot
	Active  int    // runs in progress
	Skipped uint64 // slots dropped because the job was queued or running
}

type jobState uint8

const (
	stateIdle jobState = iota
	stateQueued
	stateRunning
)

// entry is the scheduler's record of one job. All fields except name and
// offset are guarded by Scheduler.mu.
type entry struct {
	name   string
	offset time.Duration // jitter, fixed for the name
	seq    uint64        // order of first appearance; breaks due-time ties

	spec  string
	sched cron.Schedule
	slot  time.Time // nominal time of the next slot; zero if none
	due   time.Time // slot + offset: when the slot is dispatched
	index int       // position in Scheduler.due; -1 when not in it

	state   jobState
	run     QueuedRun               // the queued or running run
	listed  bool                    // queued and in Scheduler.queue (OnEnqueue returned)
	cancel  context.CancelCauseFunc // the running run's ctx (see popLocked)
	removed bool                    // dropped by SetJobs while running; deleted when it ends

	groups  []Group // the job's concurrency groups (SetJobs)
	running []Group // the groups the running run counts in (joinLocked)
	retry   bool    // queue the job again when its run ends (Throttle)
}

// Scheduler runs jobs on their schedules under a global concurrency cap,
// never two runs of one job at a time. Create it with New, load jobs with
// SetJobs and call Run. All methods are safe for concurrent use.
type Scheduler struct {
	clock          Clock
	loc            *time.Location
	logger         *slog.Logger
	run            func(ctx context.Context, r QueuedRun)
	onEnqueue      func(r QueuedRun)
	onDrop         func(r QueuedRun)
	onSkip         func(name string)
	onQueue        func(queued, active int)
	onCycle        func(now time.Time)
	max            int
	jitter         time.Duration
	allowSubMinute bool
	wake           chan struct{} // pokes the loop after SetJobs and Trigger

	mu      sync.Mutex
	jobs    map[string]*entry
	groups  map[string]*groupState // by Group.Key, while in effect
	due     dueHeap                // scheduled entries, earliest due first
	queue   []*entry               // FIFO of entries waiting for a slot
	active  int
	skipped uint64
	seq     uint64
	looping bool
	lastQ   int // last values passed to OnQueue
	lastA   int
}

// New validates o and returns an idle Scheduler with no jobs.
func New(o Options) (*Scheduler, error) {
	var errs []error
	if o.Run == nil {
		errs = append(errs, errors.New("driftwatch/schedule: Options.Run is required"))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("driftwatch/schedule: Options.Logger is required"))
	}
	if o.MaxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("driftwatch/schedule: Options.MaxConcurrent must be at least 1, got %d", o.MaxConcurrent))
	}
	if o.Jitter < 0 {
		errs = append(errs, fmt.Errorf("driftwatch/schedule: Options.Jitter must not be negative, got %s", o.Jitter))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	return &Scheduler{
		clock:          o.Clock,
		loc:            o.Location,
		logger:         o.Logger,
		run:            o.Run,
		onEnqueue:      o.OnEnqueue,
		onDrop:         o.OnDrop,
		onSkip:         o.OnSkip,
		onQueue:        o.OnQueue,
		onCycle:        o.OnCycle,
		max:            o.MaxConcurrent,
		jitter:         o.Jitter,
		allowSubMinute: o.AllowSubMinute,
		wake:           make(chan struct{}, 1),
		jobs:           make(map[string]*entry),
		groups:         make(map[string]*groupState),
	}, nil
}

// now reads the clock without its monotonic reading (slots are wall-clock
// instants, and robfig's results carry none) in the default location.
func (s *Scheduler) now() time.Time {
	return s.clock.Now().Round(0).In(s.loc)
}

// Next returns when the job's next scheduled slot will be dispatched, jitter
// included. It returns false for an unknown job or one with no further slot.
func (s *Scheduler) Next(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[name]
	if !ok || e.removed || e.due.IsZero() {
		return time.Time{}, false
	}
	return e.due, true
}

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Queued: len(s.queue), Active: s.active, Skipped: s.skipped}
}

// Run dispatches due jobs until ctx is done. Slots are handled in due-time
// order (ties in the order jobs first appeared in SetJobs) and go through
// one FIFO queue, shared with Trigger, that starts at most MaxConcurrent runs
// at a time. When ctx is done Run stops dispatching, the ctx given to
// running Options.Run calls is cancelled (it is derived from ctx), and Run
// waits for them to return before returning nil. Jobs still queued stay
// queued for a later Run. Only one Run may be active at a time.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.looping {
		s.mu.Unlock()
		return errLooping
	}
	s.looping = true
	s.mu.Unlock()

	var wg sync.WaitGroup
	var timer Timer
	var armed, lastNow time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		st := s.Stats()
		if st.Active > 0 {
			s.logger.Info("scheduler stopping: waiting for running jobs", "active", st.Active, "queued", st.Queued)
		}
		wg.Wait()
		s.mu.Lock()
		s.looping = false
		s.mu.Unlock()
	}()

	for {
		s.mu.Lock()
		es, rs := s.fireDueLocked(s.now())
		if len(rs) > 0 {
			s.mu.Unlock()
			s.announce(rs)
			s.mu.Lock()
		}
		dropped := s.listLocked(es, rs)
		now := s.now()
		if !lastNow.IsZero() && now.Before(lastNow.Add(-clockStepBack)) {
			// Slots are wall-clock instants: those already handled are
			// not handled again, so each job waits for the clock to
			// reach its next slot (as ISC cron does for a step back).
			s.logger.Warn("wall clock stepped back; slots already run are not run again, each job waits for its next slot",
				"by", lastNow.Sub(now).Round(time.Second))
		}
		lastNow = now
		s.dispatchLocked(ctx, &wg)
		wakeAt := now.Add(maxSleep)
		if len(s.due) > 0 && s.due[0].due.Before(wakeAt) {
			wakeAt = s.due[0].due
		}
		if end := s.holdEndLocked(now); !end.IsZero() && end.Before(wakeAt) {
			wakeAt = end
		}
		s.mu.Unlock()
		s.dropped(dropped)
		if s.onCycle != nil {
			s.onCycle(now)
		}

		if timer == nil || !armed.Equal(wakeAt) {
			if timer != nil {
				timer.Stop()
			}
			timer, armed = s.clock.NewTimerAt(wakeAt), wakeAt
		}
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
			timer = nil
		case <-s.wake:
		}
	}
}

// dispatchLocked starts queued runs while there is capacity, in queue
// order, passing over those whose concurrency group is full or held.
func (s *Scheduler) dispatchLocked(ctx context.Context, wg *sync.WaitGroup) {
	now := s.now()
	for s.active < s.max && ctx.Err() == nil {
		i := s.nextLocked(now)
		if i < 0 {
			break
		}
		e, runCtx := s.popLocked(ctx, i)
		wg.Go(func() { s.worker(ctx, runCtx, e) })
	}
	s.notifyQueueLocked()
}

// worker executes e with its run's ctx (runCtx, from popLocked), then
// keeps taking queued jobs while there are any, so a finishing run hands
// its capacity to the next job without a round trip through the loop.
func (s *Scheduler) worker(ctx, runCtx context.Context, e *entry) {
	for e != nil {
		s.execute(runCtx, e.run)
		s.mu.Lock()
		e.cancel(nil)
		e.cancel = nil
		s.active--
		s.leaveLocked(e)
		e.state = stateIdle
		if e.removed && s.jobs[e.name] == e {
			delete(s.jobs, e.name)
		}
		retry := ""
		if e.retry && !e.removed && ctx.Err() == nil {
			retry = e.name
		}
		e.retry = false
		e = nil
		if ctx.Err() == nil {
			if i := s.nextLocked(s.now()); i >= 0 {
				e, runCtx = s.popLocked(ctx, i)
			}
		}
		s.notifyQueueLocked()
		s.mu.Unlock()
		if retry != "" {
			// Queued behind the runs queued already; it starts once its
			// groups are released (a stopped loop leaves it queued).
			if _, err := s.Queue(retry, TriggerRetry); err != nil {
				s.logger.Warn("throttled run not queued again", "job", retry, "err", err)
			}
		}
	}
}

// execute calls Options.Run, recovering a panic so that one broken run
// neither kills the daemon nor unschedules the job.
func (s *Scheduler) execute(ctx context.Context, r QueuedRun) {
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("run panicked", "job", r.Name, "trigger", r.Trigger, "run_id", r.ID, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	verbose := s.logger.Enabled(ctx, slog.LevelDebug)
	var start time.Time
	if verbose {
		start = s.clock.Now()
		s.logger.Debug("job dispatched", "job", r.Name, "trigger", r.Trigger, "run_id", r.ID)
	}
	s.run(ctx, r)
	if verbose {
		s.logger.Debug("job returned", "job", r.Name, "trigger", r.Trigger, "run_id", r.ID, "duration", s.clock.Now().Sub(start))
	}
}
