package schedule

import "time"

// Clock is the scheduler's source of time. The daemon uses the real clock;
// tests and benchmarks inject scheduletest.FakeClock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimerAt returns a timer that fires once, when the clock reaches t.
	// A t that is not in the future fires immediately.
	//
	// The deadline is absolute, not a duration, so a fake clock advanced
	// between the scheduler reading Now and arming its timer cannot make the
	// timer late.
	NewTimerAt(t time.Time) Timer
}

// Timer is a one-shot timer created by a Clock.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped a
	// pending timer.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// NewTimerAt returns a time.Timer that fires after time.Until(t).
func (RealClock) NewTimerAt(t time.Time) Timer {
	return realTimer{time.NewTimer(time.Until(t))}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// OffsetClock is the wall clock shifted by Offset(), read at every call:
// it stands for a wall clock that can be stepped (the fault-injection
// tests). Its timers are real timers for the time left on the shifted
// clock, so, like real ones, they do not notice a step made while they
// wait: the scheduler's one-minute cap on a sleep does.
type OffsetClock struct {
	Offset func() time.Duration
}

// Now returns time.Now shifted by Offset.
func (c OffsetClock) Now() time.Time { return time.Now().Add(c.Offset()) }

// NewTimerAt returns a time.Timer that fires after t.Sub(c.Now()).
func (c OffsetClock) NewTimerAt(t time.Time) Timer {
	return realTimer{time.NewTimer(t.Sub(c.Now()))}
}
