package schedule

import (
	"container/heap"
	"time"
)

// reschedLocked sets e.due from e.slot and places e in the due heap, or takes
// it out if it has no next slot.
func (s *Scheduler) reschedLocked(e *entry) {
	if e.slot.IsZero() {
		e.due = time.Time{}
		if e.index >= 0 {
			heap.Remove(&s.due, e.index)
		}
		s.logger.Warn("job has no further slots", "job", e.name, "spec", e.spec)
		return
	}
	e.due = e.slot.Add(e.offset)
	if e.index >= 0 {
		heap.Fix(&s.due, e.index)
	} else {
		heap.Push(&s.due, e)
	}
}

// fireDueLocked handles every slot that is due at now, earliest first: an
// idle job is reserved (see reserveLocked) and returned with its run, a
// queued or running one skips the slot. The next slot is computed from the
// slot itself, not from now, so schedules do not drift with dispatch
// latency. If the loop woke so late that the following slot
// is also past (host suspended, clock stepped), the job runs once and the
// missed slots are not replayed.
func (s *Scheduler) fireDueLocked(now time.Time) (es []*entry, rs []QueuedRun) {
	var late int
	var lateBy time.Duration
	for len(s.due) > 0 && !s.due[0].due.After(now) {
		e := s.due[0]
		if e.state == stateIdle {
			es, rs = append(es, e), append(rs, s.reserveLocked(e, TriggerSchedule))
		} else {
			s.skipped++
			if s.onSkip != nil {
				s.onSkip(e.name)
			}
			s.logger.Info("slot skipped: previous run still queued or running", "job", e.name, "slot", e.slot)
		}
		next := e.sched.Next(e.slot)
		if !next.IsZero() && !next.Add(e.offset).After(now) {
			late++
			lateBy = max(lateBy, now.Sub(e.due))
			next = e.sched.Next(now.Add(-e.offset))
		}
		e.slot = next
		s.reschedLocked(e)
	}
	if late > 0 {
		s.logger.Warn("scheduler woke late; missed slots are not replayed", "jobs", late, "late_by", lateBy)
	}
	// No OnQueue here: the caller dispatches next and reports the result,
	// so a burst of due jobs is not reported as all queued.
	return es, rs
}

// dueHeap orders entries by due time, then by seq.
type dueHeap []*entry

func (h dueHeap) Len() int { return len(h) }

func (h dueHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}

func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
