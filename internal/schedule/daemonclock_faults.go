//go:build faults

package schedule

import (
	"os"
	"strings"
	"time"
)

// DaemonClock is, in a build with the faults tag only (never a release),
// the real clock shifted by the duration written in the file named by
// DRIFTWATCH_FAULTS_CLOCK_OFFSET_FILE, read at every call: a test steps
// the daemon's wall clock by rewriting the file, while Go's timers keep
// measuring monotonic time, as they do when a real clock is stepped.
// Without the variable it is the real clock (nil).
func DaemonClock() Clock {
	file := os.Getenv("DRIFTWATCH_FAULTS_CLOCK_OFFSET_FILE")
	if file == "" {
		return nil
	}
	return OffsetClock{Offset: func() time.Duration {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0
		}
		d, err := time.ParseDuration(strings.TrimSpace(string(b)))
		if err != nil {
			return 0
		}
		return d
	}}
}
