package cronspec_test

import (
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // hermetic zones: the test must not depend on the host's zoneinfo

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule/cronspec"
)

// ref is a Monday, 10:00 UTC.
var ref = time.Date(2026, time.January, 5, 10, 0, 0, 0, time.UTC)

func TestParseSpecValid(t *testing.T) {
	tests := []struct {
		spec string
		from time.Time
		want time.Time // first Next after from
	}{
		{"*/15 * * * *", ref, ref.Add(15 * time.Minute)},
		{"0 9 * * mon-fri", ref, time.Date(2026, 1, 6, 9, 0, 0, 0, time.UTC)},
		{"  @hourly  ", ref, ref.Add(time.Hour)},
		{"@daily", ref, time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)},
		{"@midnight", ref, time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)},
		{"@weekly", ref, time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC)},
		{"@monthly", ref, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
		{"@yearly", ref, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@every 30m", ref, ref.Add(30 * time.Minute)},
		{"@every 1h30m", ref, ref.Add(90 * time.Minute)},
		{"@every 90s", ref, ref.Add(90 * time.Second)},
		{"0 0 29 2 *", ref, time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		// CRON_TZ is honoured: 09:00 in Tokyo (UTC+9) is 00:00 UTC.
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", ref, time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)},
		{"TZ=Asia/Tokyo 0 9 * * *", ref, time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)},
		{"CRON_TZ=America/New_York @daily", ref, time.Date(2026, 1, 6, 5, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Europe/Berlin\t30 2 * * *", ref, time.Date(2026, 1, 6, 1, 30, 0, 0, time.UTC)},
		// Without a prefix the spec is evaluated in the location of the
		// time given to Next.
		{"0 9 * * *", ref.In(mustLoad(t, "Asia/Tokyo")), time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			sched, err := cronspec.Parse(tt.spec)
			require.NoError(t, err)
			got := sched.Next(tt.from)
			require.True(t, tt.want.Equal(got), "Next(%s) = %s, want %s", tt.from, got, tt.want)
		})
	}
}

func TestParseSpecInvalid(t *testing.T) {
	tests := []struct {
		spec    string
		wantErr string // substring, after the common `schedule "<spec>": ` prefix
	}{
		{"", "empty schedule"},
		{"   ", "empty schedule"},
		{"* * *", "expected exactly 5 fields"},
		{"0 * * * * *", "expected exactly 5 fields"},
		{"61 * * * *", "above maximum"},
		{"*/0 * * * *", "step"},
		{"0 0 30 2 *", "never fires"},
		{"0 0 31 4 *", "never fires"},
		{"@reboot", "unrecognized descriptor"},
		{"@every", "@every needs a duration"},
		{"@every banana", "@every: time: invalid duration"},
		{"@every 30s", "interval must be at least 1m0s"},
		{"@every 500ms", "interval must be a whole number of seconds"},
		{"@every 1m0.5s", "interval must be a whole number of seconds"},
		{"@every 0s", "interval must be positive"},
		{"@every -5m", "interval must be positive"},
		// robfig/cron v3.0.1 panics on these (slice bounds out of range).
		{"CRON_TZ=UTC", "CRON_TZ= must be followed by a space and a schedule"},
		{"TZ=Europe/Berlin", "TZ= must be followed by a space and a schedule"},
		{"TZ=", "TZ= must be followed by a space and a schedule"},
		{"CRON_TZ=UTC   ", "CRON_TZ= must be followed by a space and a schedule"},
		{"CRON_TZ= @daily", "CRON_TZ= needs a time zone name"},
		{"CRON_TZ=Mars/Olympus_Mons @daily", `time zone "Mars/Olympus_Mons"`},
		{"TZ=UTC TZ=UTC @daily", "more than one time zone prefix"},
		{"CRON_TZ=UTC CRON_TZ=UTC", "more than one time zone prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			var sched any
			var err error
			require.NotPanics(t, func() { sched, err = cronspec.Parse(tt.spec) })
			require.Error(t, err)
			require.Nil(t, sched)
			require.True(t, strings.HasPrefix(err.Error(), "schedule "+quote(tt.spec)+": "), "error %q does not name the spec", err)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestParseSpecSubMinute(t *testing.T) {
	tests := []struct {
		spec    string
		want    time.Duration // first Next after ref, from ref
		wantErr string
	}{
		{spec: "@every 2s", want: 2 * time.Second},
		{spec: "@every 1s", want: time.Second},
		{spec: "@every 5m", want: 5 * time.Minute},
		{spec: "@every 500ms", wantErr: "whole number of seconds"},
		{spec: "@every 0s", wantErr: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			sched, err := cronspec.ParseSubMinute(tt.spec)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, sched.Next(ref).Sub(ref))
			_, err = cronspec.Parse(tt.spec)
			if tt.want < time.Minute {
				require.ErrorContains(t, err, "at least 1m0s", "ParseSpec must keep rejecting sub-minute intervals")
			}
		})
	}
}

// FuzzParseSpec checks that ParseSpec never panics, that errors name the
// spec, and that accepted specs produce a usable Next.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"* * * * *", "@hourly", "@every 5m", "CRON_TZ=UTC", "TZ=", "CRON_TZ=Europe/Berlin 30 2 * * *",
		"TZ=UTC @every 1m", "0 0 30 2 *", "1-5/2 */3 1,15 jan-jun mon-fri", "@every -1s", "CRON_TZ==",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		sched, err := cronspec.Parse(spec)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "schedule "+quote(spec)+": "), "error %q does not name the spec", err)
			return
		}
		next := sched.Next(ref)
		require.True(t, next.After(ref), "Next(%s) = %s", ref, next)
	})
}

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func quote(s string) string { return strconv.Quote(s) }
