package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		" 7 ":                           7 * time.Second,
		"7":                             7 * time.Second,
		"0":                             0,
		"-3":                            0,
		"soon":                          0,
		"Tue, 03 Nov 2026 09:01:30 GMT": 90 * time.Second,
		"Tue, 03 Nov 2026 08:00:00 GMT": 0,
	} {
		require.Equal(t, want, ParseRetryAfter(v, now), "%q", v)
	}
}
