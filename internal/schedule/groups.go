package schedule

import (
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// TriggerRetry is the trigger of the run Throttle queues again once the
// throttled run has ended.
const TriggerRetry = "retry"

// Group is a concurrency group a job belongs to: the jobs that share Key
// (workspaces of one cloud account or region) run at most Max at once,
// and a throttled run of one of them holds them all (Throttle).
type Group struct {
	Key string
	// Max is how many runs of the group may run at once (>= 1).
	Max int
	// Backoff is the first hold after a throttled run; each throttled run
	// of the group that follows doubles it, up to BackoffMax. A hold is
	// spread by up to a fifth either way, so that the group's jobs, and
	// groups throttled at once, do not come back in step.
	Backoff, BackoffMax time.Duration
}

// groupState is a group's running runs and hold. It is kept while either
// is in effect, and the backoff's step while the group is throttled.
type groupState struct {
	active int
	// until is the end of the group's hold; streak counts the throttled
	// runs in a row (the backoff's step), reset by a run that is not.
	until  time.Time
	streak int
}

// GroupHold is a group held after a throttled run.
type GroupHold struct {
	Key   string
	Until time.Time
	// Streak is the number of throttled runs in a row.
	Streak int
}

// eligibleLocked reports whether e may start at now: every group of its
// has room and none is held.
func (s *Scheduler) eligibleLocked(e *entry, now time.Time) bool {
	for _, g := range e.groups {
		if st := s.groups[g.Key]; st != nil && (st.active >= g.Max || now.Before(st.until)) {
			return false
		}
	}
	return true
}

// nextLocked is the index in the queue of the first run that may start
// at now, or -1: a run whose group is full or held waits, and the runs
// behind it go ahead.
func (s *Scheduler) nextLocked(now time.Time) int {
	for i, e := range s.queue {
		if len(e.groups) == 0 || s.eligibleLocked(e, now) {
			return i
		}
	}
	return -1
}

// joinLocked counts e's run in its groups; leaveLocked ends that.
func (s *Scheduler) joinLocked(e *entry) {
	e.running = e.groups
	for _, g := range e.running {
		st := s.groups[g.Key]
		if st == nil {
			st = &groupState{}
			s.groups[g.Key] = st
		}
		st.active++
	}
}

func (s *Scheduler) leaveLocked(e *entry) {
	for _, g := range e.running {
		if st := s.groups[g.Key]; st != nil {
			st.active--
			s.forgetLocked(g.Key, st)
		}
	}
	e.running = nil
}

// forgetLocked drops a group's state once nothing is in effect.
func (s *Scheduler) forgetLocked(key string, st *groupState) {
	if st.active <= 0 && st.streak == 0 && !s.now().Before(st.until) {
		delete(s.groups, key)
	}
}

// holdEndLocked is the earliest end of a hold after now that a queued run
// waits for (zero: none), when the loop must look again.
func (s *Scheduler) holdEndLocked(now time.Time) time.Time {
	var end time.Time
	for _, e := range s.queue {
		for _, g := range e.groups {
			if st := s.groups[g.Key]; st != nil && now.Before(st.until) && (end.IsZero() || st.until.Before(end)) {
				end = st.until
			}
		}
	}
	return end
}

// Throttle is told that the running run of job name was throttled by its
// cloud API: every group of the run is held for its backoff (doubled for
// each throttled run in a row, with jitter), and the job is queued again
// (TriggerRetry) once this run ends, to start when its groups are
// released. It returns the holds it set; none for a job that is not
// running or in no group.
func (s *Scheduler) Throttle(name string) []GroupHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[name]
	if !ok || e.state != stateRunning || len(e.running) == 0 {
		return nil
	}
	e.retry = true
	now := s.now()
	var out []GroupHold
	for _, g := range e.running {
		st := s.groups[g.Key]
		st.streak++
		d := g.Backoff << min(st.streak-1, 20)
		if d > g.BackoffMax || d <= 0 {
			d = g.BackoffMax
		}
		d += time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
		if until := now.Add(d); until.After(st.until) {
			st.until = until
		}
		out = append(out, GroupHold{Key: g.Key, Until: st.until, Streak: st.streak})
	}
	return out
}

// Unthrottled is told that the running run of job name was not throttled:
// the backoff of its groups starts again from the first step. A hold
// already set runs out.
func (s *Scheduler) Unthrottled(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[name]
	if !ok {
		return
	}
	for _, g := range e.running {
		if st := s.groups[g.Key]; st != nil {
			st.streak = 0
		}
	}
}

// Holds are the groups held now, by key.
func (s *Scheduler) Holds() []GroupHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []GroupHold
	for k, st := range s.groups {
		if now.Before(st.until) {
			out = append(out, GroupHold{Key: k, Until: st.until, Streak: st.streak})
		}
	}
	slices.SortFunc(out, func(a, b GroupHold) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Held are the holds in effect now on job name's groups.
func (s *Scheduler) Held(name string) []GroupHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[name]
	if !ok {
		return nil
	}
	now := s.now()
	var out []GroupHold
	for _, g := range e.groups {
		if st := s.groups[g.Key]; st != nil && now.Before(st.until) {
			out = append(out, GroupHold{Key: g.Key, Until: st.until, Streak: st.streak})
		}
	}
	return out
}
