//go:build faults

package e2etest

// The fault-injection suite (`make test-faults`, and the last step of
// `make test`): its tests are in the faults_*_test.go files, named
// TestFaults*. Its daemon binary is built with the faults tag, which only
// lets a test step the scheduler's wall clock (internal/app/clock_faults.go);
// everything else is the release code.
func init() { buildTags = "faults" }
