package stats

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999", s)
	if err != nil {
		panic(err)
	}
	return t
}

func f(v float64) *float64 { return &v }

func run(id, ws, start, finish string, st drift.Status) Run {
	return Run{ID: id, Workspace: ws, Started: at(start), Finished: at(finish), Status: st}
}

func before(r Run) Run { r.Before = true; return r }

// TestReport walks three workspaces through three days; every number in
// want is computed by hand in the comments.
func TestReport(t *testing.T) {
	acc, err := NewAccumulator(at("2026-03-01 00:00:00"), at("2026-03-03 12:00:00"))
	require.NoError(t, err)
	for _, r := range []Run{
		// a: clean before the window, then clean, drift (detected 52 min
		// after the clean run: 3120 s), errored, forbidden (ends the error
		// incident), clean (resolves 46h01m = 165660 s after detection).
		before(run("r1", "a", "2026-02-28 10:00:00", "2026-02-28 10:05:00", drift.StatusClean)),
		run("r2", "a", "2026-03-01 09:00:00", "2026-03-01 09:10:00", drift.StatusClean),
		run("r3", "a", "2026-03-01 10:00:00", "2026-03-01 10:02:00", drift.StatusDrift),
		run("r4", "a", "2026-03-02 10:00:00", "2026-03-02 10:01:00", drift.StatusErrored),
		run("r5", "a", "2026-03-02 11:00:00", "2026-03-02 11:04:00", drift.StatusForbidden),
		run("r6", "a", "2026-03-03 08:00:00", "2026-03-03 08:03:00", drift.StatusClean),
		// b: drifting since 02-27 12:00 (context), clean on 03-01 at 12:30
		// (resolved after 2d 30m = 174600 s), drift again at 13:01 (31 min
		// after the clean run: 1860 s), still open at the end.
		before(run("r7", "b", "2026-02-27 11:59:00", "2026-02-27 12:00:00", drift.StatusDrift)),
		before(run("r8", "b", "2026-02-28 11:59:00", "2026-02-28 12:00:00", drift.StatusDrift)),
		run("r9", "b", "2026-03-01 12:00:00", "2026-03-01 12:30:00", drift.StatusClean),
		run("r10", "b", "2026-03-01 13:00:00", "2026-03-01 13:01:00", drift.StatusDrift),
		// c: a cancelled run (skipped) and an errored one.
		run("r11", "c", "2026-03-02 00:00:00", "2026-03-02 00:00:00.5", "cancelled"),
		run("r12", "c", "2026-03-02 01:00:00", "2026-03-02 01:01:00", drift.StatusErrored),
	} {
		require.NoError(t, acc.Add(r), r.ID)
	}
	ids := acc.DriftRuns()
	slices.Sort(ids)
	require.Equal(t, []string{"r10", "r3", "r5"}, ids)

	got := acc.Report([]TypeCount{{"aws_s3_bucket", 2, 1}, {"aws_iam_role", 3, 2}})
	want := Report{
		Since: at("2026-03-01 00:00:00"),
		Until: at("2026-03-03 12:00:00"),
		Days: []Day{
			{
				Date:              "2026-03-01",
				WorkspacesChecked: 2, WorkspacesDrifted: 2,
				Incidents: Incidents{IncidentsOpened: 2, IncidentsResolved: 1, DriftIncidentsOpened: 2, DriftIncidentsResolved: 1},
				// ttd [1860 3120]: mean 2490, p90 rank ceil(1.8)=2; ttr [174600].
				Times: Times{f(2490), f(3120), f(174600), f(174600)},
				// durations 600 120 1800 60 s: p50 rank 2 = 120, p95 rank 4 = 1800.
				Runs: Runs{Runs: 4, P50RunDurationSeconds: f(120), P95RunDurationSeconds: f(1800)},
			},
			{
				Date:              "2026-03-02",
				WorkspacesChecked: 2, WorkspacesForbidden: 1, WorkspacesErrored: 2,
				Incidents: Incidents{IncidentsOpened: 2, IncidentsResolved: 1, ErrorIncidentsOpened: 2, ErrorIncidentsResolved: 1},
				// durations 60 240 60 s: p50 rank 2 = 60, p95 rank 3 = 240.
				Runs: Runs{Runs: 3, RunsErrored: 2, ErrorRate: 2.0 / 3, P50RunDurationSeconds: f(60), P95RunDurationSeconds: f(240)},
			},
			{
				Date:              "2026-03-03",
				WorkspacesChecked: 1,
				Incidents:         Incidents{IncidentsResolved: 1, DriftIncidentsResolved: 1},
				Times:             Times{MeanTimeToResolveSeconds: f(165660), P90TimeToResolveSeconds: f(165660)},
				Runs:              Runs{Runs: 1, P50RunDurationSeconds: f(180), P95RunDurationSeconds: f(180)},
			},
		},
		Totals: Totals{
			Workspaces: 3, WorkspacesDrifted: 2, WorkspacesForbidden: 1, WorkspacesErrored: 2,
			DriftIncidentsOpenAtEnd: 1,
			Incidents: Incidents{IncidentsOpened: 4, IncidentsResolved: 3,
				DriftIncidentsOpened: 2, DriftIncidentsResolved: 2, ErrorIncidentsOpened: 2, ErrorIncidentsResolved: 1},
			// ttr [165660 174600]: mean 170130, p90 rank 2.
			Times: Times{f(2490), f(3120), f(170130), f(174600)},
			// 60 60 60 120 180 240 600 1800: p50 rank 4 = 120, p95 rank 8.
			Runs: Runs{Runs: 8, RunsErrored: 2, ErrorRate: 0.25, P50RunDurationSeconds: f(120), P95RunDurationSeconds: f(1800)},
		},
		TopWorkspaces: []WorkspaceCount{
			{Workspace: "a", DaysDrifted: 2, DaysForbidden: 1, DaysErrored: 1, DriftIncidentsOpened: 1},
			{Workspace: "b", DaysDrifted: 1, DriftIncidentsOpened: 1},
		},
		TopResourceTypes: []TypeCount{{"aws_iam_role", 3, 2}, {"aws_s3_bucket", 2, 1}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}

// TestEmptyDays: a day without runs is present with zero counts and no
// times, so a chart has a point for every day.
func TestEmptyDays(t *testing.T) {
	acc, err := NewAccumulator(at("2026-03-01 06:00:00"), at("2026-03-03 06:00:00"))
	require.NoError(t, err)
	require.NoError(t, acc.Add(run("r1", "a", "2026-03-03 01:00:00", "2026-03-03 01:00:10", drift.StatusDrift)))
	got := acc.Report(nil)
	require.Len(t, got.Days, 3)
	require.Equal(t, Day{Date: "2026-03-01"}, got.Days[0])
	require.Equal(t, Day{Date: "2026-03-02"}, got.Days[1])
	// A workspace's first run opens an incident, but with no clean run
	// before it there is no time to detect.
	require.Equal(t, 1, got.Days[2].DriftIncidentsOpened)
	require.Nil(t, got.Days[2].MeanTimeToDetectSeconds)
	require.Equal(t, []TypeCount{}, got.TopResourceTypes)
}

func TestAddOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []Run
		want string
	}{
		{"workspace again", []Run{
			run("1", "a", "2026-03-01 01:00:00", "2026-03-01 01:01:00", drift.StatusClean),
			run("2", "b", "2026-03-01 01:00:00", "2026-03-01 01:01:00", drift.StatusClean),
			run("3", "a", "2026-03-01 02:00:00", "2026-03-01 02:01:00", drift.StatusClean),
		}, `runs of workspace "a" are not together`},
		{"older run", []Run{
			run("1", "a", "2026-03-01 02:00:00", "2026-03-01 02:01:00", drift.StatusClean),
			run("2", "a", "2026-03-01 01:00:00", "2026-03-01 01:01:00", drift.StatusClean),
		}, `runs of workspace "a" are not in start order (2026-03-01T01:00:00Z after 2026-03-01T02:00:00Z)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc, err := NewAccumulator(at("2026-03-01 00:00:00"), at("2026-03-02 00:00:00"))
			require.NoError(t, err)
			var last error
			for _, r := range tc.runs {
				last = acc.Add(r)
			}
			require.EqualError(t, last, tc.want)
		})
	}
}

func TestParseSince(t *testing.T) {
	now := at("2026-03-31 15:30:00")
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "1d", want: "2026-03-31 00:00:00"},
		{in: "30d", want: "2026-03-02 00:00:00"},
		{in: "400d", want: "2025-02-25 00:00:00"},
		{in: "12h", want: "2026-03-31 03:30:00"},
		{in: "9600h", want: "2025-02-24 15:30:00"},
		{in: "401d", err: `"401d" is too long: at most 400d`},
		{in: "9601h", err: `"9601h" is too long: at most 9600h`},
		{in: "0d", err: `"0d" is not a duration: want a number of days or hours such as 30d or 12h`},
		{in: "-3d", err: `"-3d" is not a duration: want a number of days or hours such as 30d or 12h`},
		{in: "+3d", err: `"+3d" is not a duration: want a number of days or hours such as 30d or 12h`},
		{in: "3w", err: `"3w" is not a duration: want a number of days or hours such as 30d or 12h`},
		{in: "d", err: `"d" is not a duration: want a number of days or hours such as 30d or 12h`},
		{in: "1.5d", err: `"1.5d" is not a duration: want a number of days or hours such as 30d or 12h`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSince(tc.in, now)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, at(tc.want), got)
		})
	}
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		name string
		vs   []float64
		p    float64
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{7}, 90, 7},
		{"p50 of 4 is rank 2", []float64{1, 2, 3, 4}, 50, 2},
		{"p90 of 10 is rank 9", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
		{"p90 of 11 is rank 10", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 90, 10},
		{"p100 is the max", []float64{1, 2, 3}, 100, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, Percentile(tc.vs, tc.p), 0)
		})
	}
}

func TestQuantize(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{-5, 0}, {0, 0}, {999, 999}, {1000, 1000}, {1234, 1230}, {1235, 1240},
		{12345, 12300}, {12350, 12400}, {99950, 100000}, {3_600_000, 3_600_000}, {3_654_321, 3_650_000},
	} {
		require.Equal(t, tc.want, quantize(tc.in), "quantize(%d)", tc.in)
	}
}

func TestDigest(t *testing.T) {
	var d digest
	_, ok := d.quantile(50)
	require.False(t, ok)
	// 100 runs of 1..100 s: p50 is rank 50 (50 s), p95 rank 95 (95 s).
	for s := int64(1); s <= 100; s++ {
		d.add(s * 1000)
	}
	p50, _ := d.quantile(50)
	p95, _ := d.quantile(95)
	require.Equal(t, []int64{50_000, 95_000}, []int64{p50, p95})
	// Merged twice over, the ranks double and the values stay.
	var m digest
	m.merge(&d)
	m.merge(&d)
	p95, _ = m.quantile(95)
	require.Equal(t, int64(95_000), p95)
	require.Equal(t, 200, m.n)
}

func TestTop(t *testing.T) {
	ws := []WorkspaceCount{
		{Workspace: "c", DaysDrifted: 3},
		{Workspace: "b", DaysDrifted: 5, DriftIncidentsOpened: 1},
		{Workspace: "a", DaysDrifted: 5, DriftIncidentsOpened: 1},
		{Workspace: "d", DaysDrifted: 5, DriftIncidentsOpened: 4},
	}
	require.Equal(t, []string{"d", "a", "b"}, names(TopWorkspaces(ws, 3)))
	require.Equal(t, "c", ws[0].Workspace, "the input is not reordered")
	ts := []TypeCount{{"x", 1, 1}, {"y", 4, 1}, {"z", 4, 2}, {"w", 4, 2}}
	require.Equal(t, []TypeCount{{"w", 4, 2}, {"z", 4, 2}, {"y", 4, 1}, {"x", 1, 1}}, TopTypes(ts, 10))
	require.Equal(t, []TypeCount{}, TopTypes(nil, 10))
}

func names(ws []WorkspaceCount) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Workspace)
	}
	return out
}

// Group incidents count on the UTC day they opened, whenever they are
// added; outside the window they do not count; they are not part of
// incidents_opened.
func TestGroupIncidentsOpened(t *testing.T) {
	acc, err := NewAccumulator(at("2026-03-01 06:00:00"), at("2026-03-03 06:00:00"))
	require.NoError(t, err)
	acc.AddGroupOpened(at("2026-03-01 05:59:59")) // before the window
	acc.AddGroupOpened(at("2026-03-01 07:00:00"))
	require.NoError(t, acc.Add(run("r1", "a", "2026-03-02 01:00:00", "2026-03-02 01:00:10", drift.StatusDrift)))
	acc.AddGroupOpened(at("2026-03-03 00:00:00"))
	acc.AddGroupOpened(at("2026-03-03 05:00:00"))
	acc.AddGroupOpened(at("2026-03-03 06:00:01")) // after it
	got := acc.Report(nil)
	require.Equal(t, []int{1, 0, 2}, []int{got.Days[0].GroupIncidentsOpened, got.Days[1].GroupIncidentsOpened, got.Days[2].GroupIncidentsOpened})
	require.Equal(t, 3, got.Totals.GroupIncidentsOpened)
	require.Equal(t, 1, got.Totals.IncidentsOpened, "the drift incident alone")
}

// TestScans: a scan finds 3 unmanaged resources, then 1, beside a
// workspace that drifts. The scan counts in its own figures, and the
// workspace figures are those of the workspace alone.
func TestScans(t *testing.T) {
	since, until := at("2026-03-01 00:00:00"), at("2026-03-03 01:00:00")
	ws := []Run{
		before(run("w0", "app", "2026-02-28 10:00:00", "2026-02-28 10:01:00", drift.StatusClean)),
		run("w1", "app", "2026-03-01 10:00:00", "2026-03-01 10:01:00", drift.StatusDrift),
		run("w2", "app", "2026-03-02 10:00:00", "2026-03-02 10:01:00", drift.StatusClean),
	}
	scan := func(r Run) Run { r.Scan = true; return r }
	scanRuns := []Run{
		scan(before(run("s0", "buckets", "2026-02-28 09:00:00", "2026-02-28 09:01:00", drift.StatusDrift))),
		scan(run("s1", "buckets", "2026-03-01 09:00:00", "2026-03-01 09:01:00", drift.StatusDrift)),   // 3 unmanaged, 1 managed twice
		scan(run("s2", "buckets", "2026-03-01 21:00:00", "2026-03-01 21:05:00", drift.StatusErrored)), // no verdict on what exists
		scan(run("s3", "buckets", "2026-03-02 09:00:00", "2026-03-02 09:01:00", drift.StatusDrift)),   // 1 unmanaged
		scan(run("s4", "buckets", "2026-03-02 10:00:00", "2026-03-02 10:00:30", "cancelled")),
	}
	report := func(runs []Run) (Report, []string) {
		acc, err := NewAccumulator(since, until)
		require.NoError(t, err)
		for _, r := range runs {
			require.NoError(t, acc.Add(r), r.ID)
		}
		ids := acc.ScanRuns()
		slices.Sort(ids)
		acc.AddScanFound([]RunFound{
			{RunID: "s1", Found: Found{Unmanaged: 3, ManagedTwice: 1}},
			{RunID: "s3", Found: Found{Unmanaged: 1}},
		}, []ScanTypeCount{{"aws_sqs_queue", 1, 1}, {"aws_s3_bucket", 2, 1}})
		return acc.Report([]TypeCount{{"aws_s3_bucket", 1, 1}}), ids
	}
	alone, ids := report(ws)
	require.Empty(t, ids)
	require.Nil(t, alone.TopScans, "no scan: no scan list")
	require.Nil(t, alone.TopUnmanagedTypes)
	require.Nil(t, alone.Totals.Scans)
	require.Nil(t, alone.Days[0].Scans)
	// Scans are read like workspaces, by name: "buckets" before "app".
	got, ids := report(append(slices.Clone(scanRuns), ws...))
	require.Equal(t, []string{"s1", "s3"}, ids, "each day's last successful scan run")

	// The workspace figures are the workspace's alone.
	withoutScans := got
	withoutScans.TopScans, withoutScans.TopUnmanagedTypes, withoutScans.Totals.Scans = nil, nil, nil
	withoutScans.Days = slices.Clone(got.Days)
	for i := range withoutScans.Days {
		withoutScans.Days[i].Scans = nil
	}
	if d := cmp.Diff(alone, withoutScans); d != "" {
		t.Errorf("workspace figures changed by a scan (-alone +with the scan):\n%s", d)
	}
	require.Equal(t, 1, got.Totals.Workspaces)
	require.Equal(t, 1, got.Totals.WorkspacesDrifted)
	require.Equal(t, 1, got.Totals.DriftIncidentsOpened)
	require.Equal(t, 2, got.Totals.Runs.Runs, "the scan's runs are not the workspaces' runs")

	// The scan's own figures.
	require.Equal(t, &ScanFigures{Checked: 1, Found: Found{Unmanaged: 3, ManagedTwice: 1}}, got.Days[0].Scans)
	require.Equal(t, &ScanFigures{Checked: 1, Found: Found{Unmanaged: 1}}, got.Days[1].Scans)
	require.Equal(t, &ScanFigures{}, got.Days[2].Scans, "a day without a scan run: zeros, present")
	require.Equal(t, &ScanFigures{Checked: 1, Found: Found{Unmanaged: 1}}, got.Totals.Scans, "what the last run found")
	require.Equal(t, []ScanCount{{Scan: "buckets", Runs: 3, RunsErrored: 1, Found: Found{Unmanaged: 1},
		PeakUnmanaged: 3, PeakManagedTwice: 1}}, got.TopScans)
	require.Equal(t, []ScanTypeCount{{"aws_s3_bucket", 2, 1}, {"aws_sqs_queue", 1, 1}}, got.TopUnmanagedTypes)
}

// TestTopScans: most unmanaged first, then managed twice, peaks, name.
func TestTopScans(t *testing.T) {
	got := TopScans([]ScanCount{
		{Scan: "d", Found: Found{Unmanaged: 1}, PeakUnmanaged: 1},
		{Scan: "c", Found: Found{Unmanaged: 1}, PeakUnmanaged: 5},
		{Scan: "b", Found: Found{Unmanaged: 1, ManagedTwice: 1}},
		{Scan: "a"},
		{Scan: "e", Found: Found{Unmanaged: 2}},
	}, 4)
	names := make([]string, len(got))
	for i, c := range got {
		names[i] = c.Scan
	}
	require.Equal(t, []string{"e", "b", "c", "d"}, names)
}
