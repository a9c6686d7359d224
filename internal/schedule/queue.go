package schedule

import (
	"context"
	"fmt"
	"slices"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Trigger is Queue for callers that do not need the run.
func (s *Scheduler) Trigger(name, trigger string) error {
	_, err := s.Queue(name, trigger)
	return err
}

// Queue queues a run of the job now, behind the concurrency cap and any
// jobs already queued, and returns it (OnEnqueue has been told). An empty
// trigger means TriggerManual. It returns an error wrapping ErrUnknownJob
// or ErrBusy (with the run already queued or running). The run starts once
// Run is running.
func (s *Scheduler) Queue(name, trigger string) (QueuedRun, error) {
	if trigger == "" {
		trigger = TriggerManual
	}
	return s.enqueue(QueuedRun{Name: name, Trigger: trigger})
}

// Requeue is Queue for a run queued before (by a previous process): r
// keeps its ID, Trigger and QueuedAt, and its queue position is behind
// the runs queued already. ID and Name are required.
func (s *Scheduler) Requeue(r QueuedRun) (QueuedRun, error) {
	if r.ID == "" || r.Name == "" {
		return QueuedRun{}, fmt.Errorf("requeue: ID and Name are required (got %q, %q)", r.ID, r.Name)
	}
	if r.Trigger == "" {
		r.Trigger = TriggerManual
	}
	return s.enqueue(r)
}

// enqueue queues want (a new run when want.ID is empty: Queue) now.
func (s *Scheduler) enqueue(want QueuedRun) (QueuedRun, error) {
	name := want.Name
	s.mu.Lock()
	e, ok := s.jobs[name]
	switch {
	case !ok || e.removed:
		s.mu.Unlock()
		return QueuedRun{}, fmt.Errorf("job %q: %w", name, ErrUnknownJob)
	case e.state != stateIdle:
		busy := e.run
		s.mu.Unlock()
		return busy, fmt.Errorf("job %q: %w", name, ErrBusy)
	}
	r := s.reserveLocked(e, want.Trigger)
	if want.ID != "" {
		r.ID = want.ID
		if !want.QueuedAt.IsZero() {
			r.QueuedAt = want.QueuedAt
		}
		e.run = r
	}
	s.mu.Unlock()
	s.announce([]QueuedRun{r})
	s.mu.Lock()
	dropped := s.listLocked([]*entry{e}, []QueuedRun{r})
	s.notifyQueueLocked()
	s.mu.Unlock()
	s.dropped(dropped)
	s.poke()
	return r, nil
}

// Cancel cancels the queued or running run with this id. A queued run is
// removed from the queue (Run is never called for it) and returned with
// queued true; a running run's ctx is cancelled with cause (the run
// decides how to stop). An id that is neither queued nor running (never
// queued, finished, dropped) is ErrNoSuchRun.
func (s *Scheduler) Cancel(id string, cause error) (r QueuedRun, queued bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.jobs {
		if e.run.ID != id {
			continue
		}
		switch e.state {
		case stateQueued:
			r = e.run
			s.dequeueLocked(e)
			s.notifyQueueLocked()
			s.logger.Info("queued run cancelled", "job", e.name, "trigger", r.Trigger, "run_id", id)
			return r, true, nil
		case stateRunning:
			e.cancel(cause)
			return e.run, false, nil
		}
	}
	return QueuedRun{}, false, fmt.Errorf("run %q: %w", id, ErrNoSuchRun)
}

// reserveLocked marks e queued with a new run: from here Trigger answers
// ErrBusy, slots are skipped and Cancel finds the run, but the run joins
// the FIFO (listLocked) once OnEnqueue has been told (announce).
func (s *Scheduler) reserveLocked(e *entry, trigger string) QueuedRun {
	e.state, e.listed = stateQueued, false
	e.run = QueuedRun{ID: drift.NewRunID(), Name: e.name, Trigger: trigger, QueuedAt: s.now()}
	return e.run
}

// announce tells OnEnqueue about reserved runs; the lock is not held.
func (s *Scheduler) announce(rs []QueuedRun) {
	if s.onEnqueue != nil {
		for _, r := range rs {
			s.onEnqueue(r)
		}
	}
}

// listLocked appends the announced runs rs (of entries es) to the FIFO if
// they are still queued with the same run: Cancel may have removed one
// meanwhile. It returns those SetJobs dropped meanwhile, for dropped.
func (s *Scheduler) listLocked(es []*entry, rs []QueuedRun) (dropped []QueuedRun) {
	for i, e := range es {
		switch {
		case s.jobs[e.name] != e:
			dropped = append(dropped, rs[i])
		case e.state == stateQueued && !e.listed && e.run.ID == rs[i].ID:
			e.listed = true
			s.queue = append(s.queue, e)
		}
	}
	return dropped
}

// dropped tells OnDrop; the lock is not held.
func (s *Scheduler) dropped(rs []QueuedRun) {
	if s.onDrop != nil {
		for _, r := range rs {
			s.onDrop(r)
		}
	}
}

// popLocked moves the run at index i of the queue (nextLocked) to
// running, with a ctx of its own (derived from ctx) that Cancel can
// cancel, counted in its concurrency groups.
func (s *Scheduler) popLocked(ctx context.Context, i int) (*entry, context.Context) {
	e := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	s.joinLocked(e)
	e.state, e.listed = stateRunning, false
	runCtx, cancel := context.WithCancelCause(ctx)
	e.cancel = cancel
	s.active++
	return e, runCtx
}

// dequeueLocked takes a queued e out of the queue (or out of its
// reservation) and makes it idle.
func (s *Scheduler) dequeueLocked(e *entry) {
	for i, q := range s.queue {
		if q == e {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	e.state, e.listed = stateIdle, false
}

func (s *Scheduler) notifyQueueLocked() {
	q, a := len(s.queue), s.active
	if q == s.lastQ && a == s.lastA {
		return
	}
	s.lastQ, s.lastA = q, a
	if s.onQueue != nil {
		s.onQueue(q, a)
	}
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
