package schedule

import (
	"container/heap"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// SetJobs replaces the job set. Every spec is validated first; on any error
// nothing changes and the joined error names each bad job. Otherwise added
// jobs are scheduled from now, removed jobs are unscheduled (and dropped from
// the queue; a run in progress finishes normally), jobs whose Spec string is
// unchanged keep their next time, and jobs with a new Spec are rescheduled
// from now. A job keeps its "one run at a time" guard across a change or a
// remove-and-re-add.
func (s *Scheduler) SetJobs(jobs []Job) error {
	scheds := make([]cron.Schedule, len(jobs))
	seen := make(map[string]struct{}, len(jobs))
	var errs []error
	for i, j := range jobs {
		if j.Name == "" {
			errs = append(errs, fmt.Errorf("jobs[%d]: empty name", i))
			continue
		}
		if _, dup := seen[j.Name]; dup {
			errs = append(errs, fmt.Errorf("job %q: duplicate name", j.Name))
			continue
		}
		seen[j.Name] = struct{}{}
		for _, g := range j.Groups {
			if g.Key == "" || g.Max < 1 || g.Backoff <= 0 || g.BackoffMax < g.Backoff {
				errs = append(errs, fmt.Errorf("job %q: group %q: want a key, Max >= 1 and 0 < Backoff <= BackoffMax (got %d, %s, %s)",
					j.Name, g.Key, g.Max, g.Backoff, g.BackoffMax))
			}
		}
		sched, err := parseSpec(j.Spec, s.allowSubMinute)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %q: %w", j.Name, err))
			continue
		}
		scheds[i] = sched
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	now := s.now()
	var added, changed, removed int
	var dropped []QueuedRun
	s.mu.Lock()
	for i, j := range jobs {
		e, ok := s.jobs[j.Name]
		switch {
		case !ok:
			e = &entry{name: j.Name, offset: jitterOffset(j.Name, s.jitter), seq: s.seq, index: -1}
			s.seq++
			s.jobs[j.Name] = e
			added++
		case e.removed:
			added++
		case e.spec == j.Spec:
			e.groups = j.Groups
			continue
		default:
			changed++
		}
		e.removed = false
		e.groups = j.Groups
		e.spec, e.sched = j.Spec, scheds[i]
		e.slot = e.sched.Next(now)
		s.reschedLocked(e)
	}
	for name, e := range s.jobs {
		if _, keep := seen[name]; keep || e.removed {
			continue
		}
		removed++
		if e.index >= 0 {
			heap.Remove(&s.due, e.index)
		}
		e.slot, e.due = time.Time{}, time.Time{}
		switch e.state {
		case stateRunning:
			e.removed = true
		case stateQueued:
			if e.listed {
				dropped = append(dropped, e.run) // else listLocked reports it
			}
			s.dequeueLocked(e)
			delete(s.jobs, name)
			s.logger.Info("queued run dropped: job removed", "job", name, "trigger", e.run.Trigger, "run_id", e.run.ID)
		default:
			delete(s.jobs, name)
		}
	}
	s.notifyQueueLocked()
	total := len(s.jobs)
	s.mu.Unlock()
	s.dropped(dropped)
	s.poke()
	s.logger.Info("schedule updated", "jobs", total, "added", added, "changed", changed, "removed", removed)
	return nil
}
