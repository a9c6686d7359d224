//go:build faults

package e2etest

import (
	"testing"
	"time"
)

// The fault-injection suite (`make test-faults`, and the last step of
// `make test`): its tests are in the faults_*_test.go files, named
// TestFaults*. Its daemon binary is built with the faults tag, which only
// lets a test step the scheduler's wall clock (internal/app/clock_faults.go);
// everything else is the release code.
func init() { buildTags = "faults" }

// besideSoakLanes is how many of the other fault tests run at a time beside
// TestFaultsSoak. They spend most of their time waiting (for a minute's
// slot, a timeout, a slow or absent store), so two of them add little to
// the soak's load; more would compete with it for the CPU.
const besideSoakLanes = 2

// besideSoak holds a token per fault test running beside the soak.
var besideSoak = make(chan struct{}, besideSoakLanes)

// parallelBesideSoak marks t parallel (it runs once the suite's sequential
// tests are done, beside TestFaultsSoak), then waits for one of the
// besideSoakLanes lanes, which it holds until its cleanups have run (its
// daemons stopped, its temporary directories removed). Every test it is
// used in has what it touches to itself: its own temporary directory
// (workspaces, store, tmpfs), daemon, ports, S3 server and receivers; none
// sets an environment variable or a package-level one.
//
// For TestFaultsSoak to start at once, `go test` needs -parallel above the
// number of parallel tests (the Makefile's FAULTS_TEST sets it); with
// fewer, the soak may wait for a slot, which only makes the suite longer.
//
// The time -v prints for such a test includes its wait for a lane, which
// it logs.
func parallelBesideSoak(t *testing.T) {
	t.Helper()
	t.Parallel()
	start := time.Now()
	besideSoak <- struct{}{}
	t.Cleanup(func() { <-besideSoak })
	if waited := time.Since(start); waited >= time.Second {
		t.Logf("waited %s for a lane beside the soak", waited.Round(time.Second))
	}
}
