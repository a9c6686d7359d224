package schedule_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

func TestJitterOffset(t *testing.T) {
	// Pinned values: the offset is part of the schedule users see, so a
	// change of hash would silently move every job after an upgrade.
	tests := []struct {
		name   string
		window time.Duration
		want   time.Duration
	}{
		{"ws-prod", 0, 0},
		{"ws-prod", -time.Hour, 0},
		{"ws-prod", time.Hour, 28*time.Minute + 26*time.Second},
		{"ws-prod", 10 * time.Minute, 8*time.Minute + 26*time.Second},
		{"ws-prod", 90 * time.Second, 86 * time.Second},
		{"prod/network", time.Hour, 21*time.Minute + 8*time.Second},
		{"", time.Hour, 57*time.Minute + 19*time.Second},
		{"ws-prod", 500 * time.Millisecond, 295133851}, // below a second: not truncated
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.name, tt.window), func(t *testing.T) {
			require.Equal(t, tt.want, schedule.JitterOffset(tt.name, tt.window))
		})
	}
}

func TestJitterOffsetRangeAndDeterminism(t *testing.T) {
	for _, window := range []time.Duration{time.Nanosecond, 500 * time.Millisecond, time.Second, 90 * time.Second, time.Hour, 24 * time.Hour} {
		t.Run(window.String(), func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for i := range 10000 {
				name := fmt.Sprintf("ws-%d", i)
				off := schedule.JitterOffset(name, window)
				// Plain ifs: 60,000 require calls are slow under -race.
				if off < 0 || off >= window {
					t.Fatalf("JitterOffset(%q, %s) = %s: out of range", name, window, off)
				}
				if again := schedule.JitterOffset(name, window); again != off {
					t.Fatalf("JitterOffset(%q, %s) = %s, then %s", name, window, off, again)
				}
				if window >= time.Second && off%time.Second != 0 {
					t.Fatalf("JitterOffset(%q, %s) = %s: not truncated to the second", name, window, off)
				}
				seen[off] = true
			}
			if window >= time.Minute {
				require.Greater(t, len(seen), 50, "offsets do not spread")
			}
		})
	}
}
