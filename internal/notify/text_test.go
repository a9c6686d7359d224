package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

func TestTruncate(t *testing.T) {
	require.Equal(t, "abc", Truncate("abc", 3))
	require.Equal(t, "ab…", Truncate("abcd", 3))
	require.Equal(t, "éé…", Truncate("éééé", 3))
	require.Empty(t, Truncate("abc", 0))
}

func TestOneLine(t *testing.T) {
	require.Equal(t, "a b c", OneLine("  a\n\tb  \r\n c\n"))
	require.Empty(t, OneLine(" \n "))
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Hour: "under a minute", 0: "under a minute", 20 * time.Second: "under a minute", 30 * time.Second: "1m",
		45 * time.Minute: "45m", 61 * time.Minute: "1h 1m", 3 * time.Hour: "3h", 50 * time.Hour: "2d 2h", 48 * time.Hour: "2d",
		48*time.Hour + 29*time.Minute: "2d", 59*time.Minute + 40*time.Second: "1h",
	} {
		require.Equal(t, want, Duration(d), "%s", d)
	}
}

func TestCountsText(t *testing.T) {
	require.Equal(t, "no findings", CountsText(drift.Counts{}))
	require.Equal(t, "3 drifted, 1 pending, 2 forbidden", CountsText(drift.Counts{Drift: 3, Pending: 1, Forbidden: 2}))
	require.Equal(t, "2 forbidden", CountsText(drift.Counts{Forbidden: 2}))
}
