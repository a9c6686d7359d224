package scheduletest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// FakeClock is a schedule.Clock whose time moves only when Advance or Set is
// called. Timers fire synchronously inside Advance and Set, in deadline
// order. It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	pending []*fakeTimer
	changed chan struct{} // closed and replaced whenever pending changes
}

var _ schedule.Clock = (*FakeClock)(nil)

// NewFakeClock returns a FakeClock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimerAt returns a timer that fires when the fake time reaches t, or at
// once if it already has.
func (c *FakeClock) NewTimerAt(t time.Time) schedule.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{c: c, at: t, ch: make(chan time.Time, 1)}
	if !t.After(c.now) {
		ft.ch <- c.now
		return ft
	}
	c.pending = append(c.pending, ft)
	c.signalLocked()
	return ft
}

// Advance moves the fake time forward by d and fires every timer that is due.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the fake time to t (which may be in the past) and fires every
// timer that is due.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

// AdvanceToNext moves the fake time to the earliest pending timer's deadline
// and fires it. It reports false, without moving, if no timer is pending.
func (c *FakeClock) AdvanceToNext() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return time.Time{}, false
	}
	next := c.pending[0].at
	for _, t := range c.pending[1:] {
		if t.at.Before(next) {
			next = t.at
		}
	}
	if next.After(c.now) {
		c.setLocked(next)
	} else {
		c.setLocked(c.now)
	}
	return c.now, true
}

// Timers returns the number of timers that have neither fired nor been
// stopped.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// BlockUntilTimers waits until at least n timers are pending, which for a
// schedule.Scheduler (one timer while it waits) means its loop has finished
// handling the last wake and gone back to sleep. It returns ctx.Err() if
// ctx ends first.
func (c *FakeClock) BlockUntilTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		ok, ch := len(c.pending) >= n, c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) setLocked(t time.Time) {
	c.now = t
	slices.SortStableFunc(c.pending, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	fired := 0
	for _, ft := range c.pending {
		if ft.at.After(t) {
			break
		}
		ft.ch <- t // buffered, and each timer fires at most once
		fired++
	}
	if fired > 0 {
		c.pending = slices.Delete(c.pending, 0, fired)
		c.signalLocked()
	}
}

func (c *FakeClock) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	c  *FakeClock
	at time.Time
	ch chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.pending, t)
	if i < 0 {
		return false
	}
	c.pending = slices.Delete(c.pending, i, i+1)
	c.signalLocked()
	return true
}
