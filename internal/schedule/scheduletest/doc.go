// Package scheduletest provides FakeClock, a manually advanced
// schedule.Clock for tests and benchmarks of code that uses
// internal/schedule. Its timers take absolute deadlines, so advancing the
// clock can never race with a scheduler arming its next timer.
//
// It imports only internal/schedule and the standard library, and only test
// code may import it.
package scheduletest
