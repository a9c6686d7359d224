//go:build !faults

package app

import "github.com/driftwatch/driftwatch/internal/schedule"

// schedulerClock is the scheduler's clock: the real one (nil). A build
// with the faults tag (the fault-injection tests) replaces it with a
// clock the tests can step (see clock_faults.go).
func schedulerClock() schedule.Clock { return nil }
