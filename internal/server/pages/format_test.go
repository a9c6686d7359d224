package pages

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testNow is the fixed clock of the tests: 3 am, when on-call looks.
var testNow = time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC)

func TestRelTime(t *testing.T) {
	tests := []struct {
		d    time.Duration // now - t
		want string
	}{
		{0, "just now"},
		{9 * time.Second, "just now"},
		{-5 * time.Second, "now"},
		{45 * time.Second, "45s ago"},
		{12*time.Minute + 30*time.Second, "12m ago"},
		{-20 * time.Minute, "in 20m"},
		{3 * time.Hour, "3h ago"},
		{90 * time.Minute, "1h 30m ago"},
		{-(2*time.Hour + 5*time.Minute), "in 2h 5m"},
		{11*time.Hour + 30*time.Minute, "11h ago"},
		{47 * time.Hour, "47h ago"},
		{50 * time.Hour, "2d ago"},
		{59 * 24 * time.Hour, "59d ago"},
		{61 * 24 * time.Hour, "2026-01-12"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, relTime(testNow, testNow.Add(-tt.d)))
		})
	}
	require.Empty(t, relTime(testNow, time.Time{}))
}

func TestFmtDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{850 * time.Millisecond, "850ms"},
		{42*time.Second + 400*time.Millisecond, "42s"},
		{3*time.Minute + 5*time.Second, "3m 05s"},
		{59*time.Minute + 59*time.Second + 600*time.Millisecond, "60m 00s"},
		{62*time.Minute + 10*time.Second, "1h 02m"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, fmtDuration(tt.d))
		})
	}
}

func TestResources(t *testing.T) {
	require.Equal(t, "0 resources", resources(0))
	require.Equal(t, "1 resource", resources(1))
	require.Equal(t, "12 resources", resources(12))
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Hour: "2h", 30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", 45 * time.Second: "45s",
		168 * time.Hour: "168h",
	} {
		require.Equal(t, want, shortDuration(d), d.String())
	}
}
