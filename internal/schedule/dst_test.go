package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/schedule"
)

// The cases documented in doc.go ("Daylight saving time"): a 02:30 daily job
// in Europe/Berlin in 2026. Spring forward is Sunday 29 March (02:00 CET ->
// 03:00 CEST), fall back is Sunday 25 October (03:00 CEST -> 02:00 CET).
var dstCases = []struct {
	name  string
	from  time.Time
	want  []time.Time // UTC
	local []string    // the same instants on the Berlin wall clock
}{
	{
		name: "spring forward skips the day",
		from: time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC),
		want: []time.Time{
			time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC),
			time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC),
			time.Date(2026, 3, 31, 0, 30, 0, 0, time.UTC),
		},
		local: []string{"2026-03-28 02:30 CET", "2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST"},
	},
	{
		name: "fall back runs twice",
		from: time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC),
		want: []time.Time{
			time.Date(2026, 10, 24, 0, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC),
		},
		local: []string{"2026-10-24 02:30 CEST", "2026-10-25 02:30 CEST", "2026-10-25 02:30 CET", "2026-10-26 02:30 CET"},
	},
}

func TestDSTNext(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	for _, tt := range dstCases {
		t.Run(tt.name, func(t *testing.T) {
			sched, err := schedule.ParseSpec("CRON_TZ=Europe/Berlin 30 2 * * *")
			require.NoError(t, err)
			at := tt.from
			for i, want := range tt.want {
				at = sched.Next(at)
				require.True(t, want.Equal(at), "slot %d: got %s, want %s", i, at.UTC(), want)
				require.Equal(t, tt.local[i], at.In(berlin).Format("2006-01-02 15:04 MST"))
			}
		})
	}
}

// TestDSTScheduler drives the scheduler itself through both transitions,
// once with CRON_TZ and once with Options.Location, and checks when the job
// actually ran.
func TestDSTScheduler(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	variants := []struct {
		name string
		spec string
		loc  *time.Location
	}{
		{"CRON_TZ", "CRON_TZ=Europe/Berlin 30 2 * * *", time.UTC},
		{"Options.Location", "30 2 * * *", berlin},
	}
	for _, v := range variants {
		for _, tt := range dstCases {
			t.Run(v.name+"/"+tt.name, func(t *testing.T) {
				h := newHarnessAt(t, tt.from, func(o *schedule.Options) { o.Location = v.loc })
				s := h.s
				require.NoError(t, s.SetJobs([]schedule.Job{{Name: "nightly", Spec: v.spec}}))
				h.start()
				for _, want := range tt.want {
					next, ok := s.Next("nightly")
					require.True(t, ok)
					require.True(t, want.Equal(next), "Next = %s, want %s", next.UTC(), want)
					h.set(next)
					require.True(t, want.Equal(h.next().at))
					h.idle()
				}
			})
		}
	}
}
