//go:build !faults

package schedule

// DaemonClock is the daemon's scheduler clock: the real one (nil). A
// build with the faults tag (the fault-injection tests) replaces it with
// a clock the tests can step (see daemonclock_faults.go).
func DaemonClock() Clock { return nil }
