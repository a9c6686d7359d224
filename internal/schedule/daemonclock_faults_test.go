//go:build faults

package schedule_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// With the faults tag the daemon's clock is shifted by the offset its
// file says at every read (none: no shift), and is the real clock
// without the variable.
func TestDaemonClockOffsetFile(t *testing.T) {
	t.Setenv("DRIFTWATCH_FAULTS_CLOCK_OFFSET_FILE", "")
	require.Nil(t, schedule.DaemonClock())

	file := filepath.Join(t.TempDir(), "offset")
	t.Setenv("DRIFTWATCH_FAULTS_CLOCK_OFFSET_FILE", file)
	c := schedule.DaemonClock()
	require.NotNil(t, c)
	require.WithinDuration(t, time.Now(), c.Now(), time.Minute, "no file: no shift")
	require.NoError(t, os.WriteFile(file, []byte("2h\n"), 0o600))
	require.WithinDuration(t, time.Now().Add(2*time.Hour), c.Now(), time.Minute)
	require.NoError(t, os.WriteFile(file, []byte("soon"), 0o600))
	require.WithinDuration(t, time.Now(), c.Now(), time.Minute, "unreadable: no shift")
}
