//go:build !faults

package schedule_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// A release's daemon schedules on the real clock, whatever its
// environment says.
func TestDaemonClockIsReal(t *testing.T) {
	t.Setenv("DRIFTWATCH_FAULTS_CLOCK_OFFSET_FILE", "/nonexistent")
	require.Nil(t, schedule.DaemonClock())
}
