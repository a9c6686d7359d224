package stats

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Day is one UTC calendar day. Counts are zero on a day without runs;
// times and durations are null (nil) on a day without a sample, never a
// made-up zero.
type Day struct {
	// Date is the day, "2006-01-02" (UTC).
	Date string `json:"date"`
	// WorkspacesChecked counts the workspaces with a run that finished
	// that day; the three others, those with a run that saw drift,
	// forbidden resources, or errored (a workspace can be in several).
	WorkspacesChecked   int `json:"workspaces_checked"`
	WorkspacesDrifted   int `json:"workspaces_drifted"`
	WorkspacesForbidden int `json:"workspaces_forbidden"`
	WorkspacesErrored   int `json:"workspaces_errored"`
	Incidents
	Times
	Runs
	// Scans are the scans' figures of the day; nil (omitted) on every day
	// when no scan ran in the window.
	Scans *ScanFigures `json:"scans,omitempty"`
}

// Incidents counts incidents opened and resolved; IncidentsOpened is
// DriftIncidentsOpened plus ErrorIncidentsOpened, and so for resolved.
// GroupIncidentsOpened counts the group incidents opened (drift of
// several workspaces that shares one cause, alerted as one: see
// Accumulator.AddGroupOpened); it is not part of IncidentsOpened, whose
// drift incidents count each workspace's drift whether it was alerted
// alone or in a group.
type Incidents struct {
	IncidentsOpened        int `json:"incidents_opened"`
	IncidentsResolved      int `json:"incidents_resolved"`
	DriftIncidentsOpened   int `json:"drift_incidents_opened"`
	DriftIncidentsResolved int `json:"drift_incidents_resolved"`
	ErrorIncidentsOpened   int `json:"error_incidents_opened"`
	ErrorIncidentsResolved int `json:"error_incidents_resolved"`
	GroupIncidentsOpened   int `json:"group_incidents_opened"`
}

// Times are the drift incidents' times to detect and to resolve, in
// seconds; nil without a sample.
type Times struct {
	MeanTimeToDetectSeconds  *float64 `json:"mean_time_to_detect_seconds"`
	P90TimeToDetectSeconds   *float64 `json:"p90_time_to_detect_seconds"`
	MeanTimeToResolveSeconds *float64 `json:"mean_time_to_resolve_seconds"`
	P90TimeToResolveSeconds  *float64 `json:"p90_time_to_resolve_seconds"`
}

// Runs are the runs with a verdict: how many, how many errored, their
// ratio (0 without runs) and their durations' percentiles in seconds (nil
// without runs).
type Runs struct {
	Runs                  int      `json:"runs"`
	RunsErrored           int      `json:"runs_errored"`
	ErrorRate             float64  `json:"error_rate"`
	P50RunDurationSeconds *float64 `json:"p50_run_duration_seconds"`
	P95RunDurationSeconds *float64 `json:"p95_run_duration_seconds"`
}

// Totals are the same numbers over the whole window.
type Totals struct {
	// Workspaces counts the workspaces with a run in the window; the
	// others, those with at least one drift, forbidden or errored run.
	Workspaces          int `json:"workspaces"`
	WorkspacesDrifted   int `json:"workspaces_drifted"`
	WorkspacesForbidden int `json:"workspaces_forbidden"`
	WorkspacesErrored   int `json:"workspaces_errored"`
	// DriftIncidentsOpenAtEnd counts the drift incidents still open after
	// each workspace's last run.
	DriftIncidentsOpenAtEnd int `json:"drift_incidents_open_at_end"`
	Incidents
	Times
	Runs
	// Scans are the scans' figures over the window; nil (omitted) when
	// no scan ran in it.
	Scans *ScanFigures `json:"scans,omitempty"`
}

// WorkspaceCount is one workspace's drift over the window.
type WorkspaceCount struct {
	Workspace string `json:"workspace"`
	// DaysDrifted counts the days with a run that saw drift or forbidden
	// resources; DaysForbidden those with a forbidden run; DaysErrored
	// those with an errored run.
	DaysDrifted          int `json:"days_drifted"`
	DaysForbidden        int `json:"days_forbidden"`
	DaysErrored          int `json:"days_errored"`
	DriftIncidentsOpened int `json:"drift_incidents_opened"`
}

// TypeCount is how much one resource type drifted: on how many
// workspace-days the day's last drift or forbidden run had a counted
// drift or forbidden finding of that type, and in how many workspaces.
type TypeCount struct {
	Type          string `json:"resource_type"`
	WorkspaceDays int    `json:"workspace_days"`
	Workspaces    int    `json:"workspaces"`
}

// Report is how drift trended over a window, and what scans found. Every
// scan figure (Day.Scans, Totals.Scans, TopScans, TopUnmanagedTypes) is
// omitted (nil) when no scan ran in the window: the answer of a fleet
// without scans is what it was before scans.
type Report struct {
	Since             time.Time        `json:"since"`
	Until             time.Time        `json:"until"`
	Days              []Day            `json:"days"`
	Totals            Totals           `json:"totals"`
	TopWorkspaces     []WorkspaceCount `json:"top_workspaces"`
	TopResourceTypes  []TypeCount      `json:"top_resource_types"`
	TopScans          []ScanCount      `json:"top_scans,omitempty"`
	TopUnmanagedTypes []ScanTypeCount  `json:"top_unmanaged_types,omitempty"`
}

// TopN is how many workspaces, scans and resource types a Report lists.
const TopN = 10

// MaxDays is the longest window ParseSince accepts.
const MaxDays = 400

// ParseSince turns "Nd" (the N UTC calendar days ending today, today
// included) or "Nh" (the last N hours) into the window's start, for a
// window ending at now. N is a whole number from 1 up to MaxDays days
// (MaxDays*24 hours).
func ParseSince(v string, now time.Time) (time.Time, error) {
	if len(v) < 2 {
		return time.Time{}, fmt.Errorf("%q is not a duration: want a number of days or hours such as 30d or 12h", v)
	}
	n, err := strconv.Atoi(v[:len(v)-1])
	if err != nil || n < 1 || v[0] == '+' {
		return time.Time{}, fmt.Errorf("%q is not a duration: want a number of days or hours such as 30d or 12h", v)
	}
	now = now.UTC()
	switch v[len(v)-1] {
	case 'd':
		if n > MaxDays {
			return time.Time{}, fmt.Errorf("%q is too long: at most %dd", v, MaxDays)
		}
		return midnight(now).AddDate(0, 0, -(n - 1)), nil
	case 'h':
		if n > MaxDays*24 {
			return time.Time{}, fmt.Errorf("%q is too long: at most %dh", v, MaxDays*24)
		}
		return now.Add(-time.Duration(n) * time.Hour), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a duration: want a number of days or hours such as 30d or 12h", v)
}

func midnight(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Run is one finished run as the Accumulator reads it.
type Run struct {
	ID        string
	Workspace string
	Started   time.Time
	Finished  time.Time
	Status    drift.Status
	// Before marks a run from before the window, given as context: it
	// sets the workspace's state (an incident open since when, the last
	// clean run) and is not counted.
	Before bool
	// Scan marks a scan's run (the same on every run of the workspace):
	// it counts in the scan figures only, never in the workspaces'.
	Scan bool
}

// Status bits of a workspace-day.
const (
	markChecked uint8 = 1 << iota
	markDrift
	markForbidden
	markErrored
)

type dayAcc struct {
	marks    [4]int // workspaces per mark bit
	inc      Incidents
	ttd, ttr []float64
	runs     int
	errored  int
	dur      digest
	scans    int // scans checked
}

// wsAcc is the workspace being read.
type wsAcc struct {
	name     string
	last     time.Time // Started of the previous run
	quietAt  time.Time // finish of the last successful run without drift
	drifting bool
	driftAt  time.Time // finish of the run that opened the drift incident
	erroring bool
	opened   int
	marks    map[int]uint8
	// driftRun is each day's last drift or forbidden run.
	driftRun map[int]string
	// scan is set on a scan (its days checked are in marks).
	scan *scanAcc
}

// Accumulator builds a Report from runs given one workspace after the
// other, each workspace's runs in start order (context runs, Before, first).
// The zero value is not usable: use NewAccumulator.
type Accumulator struct {
	since, until time.Time
	start        time.Time // midnight of since
	days         []dayAcc
	cur          *wsAcc
	done         map[string]bool
	totals       Totals
	top          []WorkspaceCount
	driftRuns    []string
	scans        []scanAcc
	found        map[string]Found
	scanTypes    []ScanTypeCount
}

// NewAccumulator starts a Report of the window from since to until: its
// days are the UTC days from since's to until's, both included.
func NewAccumulator(since, until time.Time) (*Accumulator, error) {
	since, until = since.UTC(), until.UTC()
	if until.Before(since) {
		return nil, errors.New("window ends before it starts")
	}
	start := midnight(since)
	n := int(midnight(until).Sub(start)/(24*time.Hour)) + 1
	if n > MaxDays+1 {
		return nil, fmt.Errorf("window of %d days is longer than %d", n, MaxDays+1)
	}
	return &Accumulator{since: since, until: until, start: start, days: make([]dayAcc, n), done: map[string]bool{}}, nil
}

// Add reads one run. Runs without a verdict (queued, running, cancelled,
// interrupted) are skipped. A workspace's runs must come together and in
// start order; else Add returns an error and the Report is wrong.
func (a *Accumulator) Add(r Run) error {
	if r.Status.Severity() < 0 {
		return nil
	}
	if a.cur == nil || a.cur.name != r.Workspace {
		if a.done[r.Workspace] {
			return fmt.Errorf("runs of workspace %q are not together", r.Workspace)
		}
		a.flush()
		a.cur = &wsAcc{name: r.Workspace, marks: map[int]uint8{}, driftRun: map[int]string{}}
		if r.Scan {
			a.cur.scan = &scanAcc{name: r.Workspace, foundRun: map[int]string{}}
		}
	}
	w := a.cur
	if r.Started.Before(w.last) {
		return fmt.Errorf("runs of workspace %q are not in start order (%s after %s)", r.Workspace,
			r.Started.UTC().Format(time.RFC3339Nano), w.last.UTC().Format(time.RFC3339Nano))
	}
	w.last = r.Started
	if w.scan != nil {
		a.addScan(w, r)
		return nil
	}
	d := -1
	if !r.Before {
		d = a.dayOf(r.Finished)
	}
	var day *dayAcc
	if d >= 0 {
		day = &a.days[d]
		day.runs++
		day.dur.add(max(r.Finished.Sub(r.Started), 0).Milliseconds())
		w.marks[d] |= markChecked
	}
	if r.Status == drift.StatusErrored {
		if day != nil {
			day.errored++
			w.marks[d] |= markErrored
		}
		if !w.erroring {
			w.erroring = true
			if day != nil {
				day.inc.ErrorIncidentsOpened++
			}
		}
		return nil
	}
	if w.erroring {
		w.erroring = false
		if day != nil {
			day.inc.ErrorIncidentsResolved++
		}
	}
	if r.Status == drift.StatusDrift || r.Status == drift.StatusForbidden {
		if day != nil {
			if r.Status == drift.StatusDrift {
				w.marks[d] |= markDrift
			} else {
				w.marks[d] |= markForbidden
			}
			w.driftRun[d] = r.ID
		}
		if !w.drifting {
			w.drifting, w.driftAt = true, r.Finished
			if day != nil {
				day.inc.DriftIncidentsOpened++
				w.opened++
				if !w.quietAt.IsZero() {
					day.ttd = append(day.ttd, seconds(r.Finished.Sub(w.quietAt)))
				}
			}
		}
		return nil
	}
	if w.drifting {
		w.drifting = false
		if day != nil {
			day.inc.DriftIncidentsResolved++
			day.ttr = append(day.ttr, seconds(r.Finished.Sub(w.driftAt)))
		}
	}
	w.quietAt = r.Finished
	return nil
}

// AddGroupOpened counts a group incident opened at t, on t's UTC day
// when t is in the window (else not at all). Group incidents are not
// runs: the caller reads them from where they are kept, and may add
// them before, between or after the runs.
func (a *Accumulator) AddGroupOpened(t time.Time) {
	if d := a.dayOf(t); d >= 0 {
		a.days[d].inc.GroupIncidentsOpened++
	}
}

// dayOf is t's day index in the window, or -1 outside it.
func (a *Accumulator) dayOf(t time.Time) int {
	if t.Before(a.since) || t.After(a.until) {
		return -1
	}
	d := int(t.UTC().Sub(a.start) / (24 * time.Hour))
	if d >= len(a.days) {
		return -1
	}
	return d
}

func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }

// flush adds the workspace being read to the days and totals.
func (a *Accumulator) flush() {
	w := a.cur
	if w == nil {
		return
	}
	a.cur = nil
	a.done[w.name] = true
	if w.scan != nil {
		for d := range w.marks {
			a.days[d].scans++
		}
		if len(w.marks) > 0 {
			a.scans = append(a.scans, *w.scan)
		}
		return
	}
	if w.drifting {
		a.totals.DriftIncidentsOpenAtEnd++
	}
	if len(w.marks) == 0 {
		return
	}
	var seen uint8 // every mark of any day
	c := WorkspaceCount{Workspace: w.name, DriftIncidentsOpened: w.opened}
	for d, m := range w.marks {
		seen |= m
		for bit := range 4 {
			if m&(1<<bit) != 0 {
				a.days[d].marks[bit]++
			}
		}
		if m&(markDrift|markForbidden) != 0 {
			c.DaysDrifted++
		}
		if m&markForbidden != 0 {
			c.DaysForbidden++
		}
		if m&markErrored != 0 {
			c.DaysErrored++
		}
	}
	a.totals.Workspaces++
	if seen&markDrift != 0 {
		a.totals.WorkspacesDrifted++
	}
	if seen&markForbidden != 0 {
		a.totals.WorkspacesForbidden++
	}
	if seen&markErrored != 0 {
		a.totals.WorkspacesErrored++
	}
	if c.DaysDrifted > 0 || c.DriftIncidentsOpened > 0 {
		a.top = append(a.top, c)
	}
	for _, id := range w.driftRun {
		a.driftRuns = append(a.driftRuns, id)
	}
}

// DriftRuns ends the reading and returns, for every workspace-day with a
// drift or forbidden run, the last such run's ID: the runs whose findings
// make the top resource types (TopTypes). Their order is unspecified.
func (a *Accumulator) DriftRuns() []string {
	a.flush()
	return slices.Clone(a.driftRuns)
}

// Report ends the reading and returns the Report, with types (per
// resource type, over DriftRuns) ranked by TopTypes.
func (a *Accumulator) Report(types []TypeCount) Report {
	a.flush()
	rep := Report{Since: a.since, Until: a.until, Days: make([]Day, len(a.days)), Totals: a.totals}
	var all dayAcc
	for i, d := range a.days {
		rep.Days[i] = Day{
			Date:                a.start.AddDate(0, 0, i).Format(time.DateOnly),
			WorkspacesChecked:   d.marks[0],
			WorkspacesDrifted:   d.marks[1],
			WorkspacesForbidden: d.marks[2],
			WorkspacesErrored:   d.marks[3],
			Incidents:           d.inc.summed(),
			Times:               times(d.ttd, d.ttr),
			Runs:                runs(d.runs, d.errored, &d.dur),
		}
		all.inc = all.inc.plus(d.inc)
		all.ttd = append(all.ttd, d.ttd...)
		all.ttr = append(all.ttr, d.ttr...)
		all.runs += d.runs
		all.errored += d.errored
		all.dur.merge(&d.dur)
	}
	rep.Totals.Incidents = all.inc.summed()
	rep.Totals.Times = times(all.ttd, all.ttr)
	rep.Totals.Runs = runs(all.runs, all.errored, &all.dur)
	rep.TopWorkspaces = TopWorkspaces(a.top, TopN)
	rep.TopResourceTypes = TopTypes(types, TopN)
	a.reportScans(&rep)
	return rep
}

func (i Incidents) plus(j Incidents) Incidents {
	return Incidents{
		DriftIncidentsOpened:   i.DriftIncidentsOpened + j.DriftIncidentsOpened,
		DriftIncidentsResolved: i.DriftIncidentsResolved + j.DriftIncidentsResolved,
		ErrorIncidentsOpened:   i.ErrorIncidentsOpened + j.ErrorIncidentsOpened,
		ErrorIncidentsResolved: i.ErrorIncidentsResolved + j.ErrorIncidentsResolved,
		GroupIncidentsOpened:   i.GroupIncidentsOpened + j.GroupIncidentsOpened,
	}
}

func (i Incidents) summed() Incidents {
	i.IncidentsOpened = i.DriftIncidentsOpened + i.ErrorIncidentsOpened
	i.IncidentsResolved = i.DriftIncidentsResolved + i.ErrorIncidentsResolved
	return i
}

func times(ttd, ttr []float64) Times {
	var t Times
	t.MeanTimeToDetectSeconds, t.P90TimeToDetectSeconds = meanP90(ttd)
	t.MeanTimeToResolveSeconds, t.P90TimeToResolveSeconds = meanP90(ttr)
	return t
}

func meanP90(vs []float64) (mean, p90 *float64) {
	if len(vs) == 0 {
		return nil, nil
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	m, p := sum/float64(len(s)), Percentile(s, 90)
	return &m, &p
}

func runs(n, errored int, dur *digest) Runs {
	r := Runs{Runs: n, RunsErrored: errored}
	if n == 0 {
		return r
	}
	r.ErrorRate = float64(errored) / float64(n)
	if ms, ok := dur.quantile(50); ok {
		v := float64(ms) / 1000
		r.P50RunDurationSeconds = &v
	}
	if ms, ok := dur.quantile(95); ok {
		v := float64(ms) / 1000
		r.P95RunDurationSeconds = &v
	}
	return r
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of
// sorted values: the value at rank ceil(p/100 * n); 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[rank(len(sorted), p)]
}

// rank is the 0-based index of the nearest-rank p-th percentile of n.
func rank(n int, p float64) int {
	i := int(math.Ceil(p/100*float64(n))) - 1
	return min(max(i, 0), n-1)
}

// digest counts durations in milliseconds kept to three significant
// digits, so a day of 100,000 runs holds a few hundred distinct values.
type digest struct {
	counts map[int64]int
	n      int
}

func (d *digest) add(ms int64) {
	if d.counts == nil {
		d.counts = map[int64]int{}
	}
	d.counts[quantize(ms)]++
	d.n++
}

func (d *digest) merge(o *digest) {
	for v, c := range o.counts {
		if d.counts == nil {
			d.counts = map[int64]int{}
		}
		d.counts[v] += c
		d.n += c
	}
}

// quantile is the nearest-rank p-th percentile; false when empty.
func (d *digest) quantile(p float64) (int64, bool) {
	if d.n == 0 {
		return 0, false
	}
	vs := make([]int64, 0, len(d.counts))
	for v := range d.counts {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	want, seen := rank(d.n, p), 0
	for _, v := range vs {
		seen += d.counts[v]
		if seen > want {
			return v, true
		}
	}
	return vs[len(vs)-1], true
}

// quantize rounds ms to three significant digits, half up: 12345 is
// 12300, 12350 is 12400; below 1000 it is exact.
func quantize(ms int64) int64 {
	if ms < 1000 {
		return max(ms, 0)
	}
	scale := int64(1)
	for v := ms; v >= 1000; v /= 10 {
		scale *= 10
	}
	return (ms + scale/2) / scale * scale
}

// TopWorkspaces ranks workspaces by days drifted, then drift incidents
// opened, then name, and keeps the first n.
func TopWorkspaces(ws []WorkspaceCount, n int) []WorkspaceCount {
	return top(ws, n, func(a, b WorkspaceCount) int {
		return cmp.Or(
			cmp.Compare(b.DaysDrifted, a.DaysDrifted),
			cmp.Compare(b.DriftIncidentsOpened, a.DriftIncidentsOpened),
			cmp.Compare(a.Workspace, b.Workspace),
		)
	})
}

// TopTypes ranks resource types by workspace-days, then workspaces, then
// name, and keeps the first n.
func TopTypes(ts []TypeCount, n int) []TypeCount {
	return top(ts, n, func(a, b TypeCount) int {
		return cmp.Or(
			cmp.Compare(b.WorkspaceDays, a.WorkspaceDays),
			cmp.Compare(b.Workspaces, a.Workspaces),
			cmp.Compare(a.Type, b.Type),
		)
	})
}

// top is the first n of xs in rank order (a sorted copy; never nil, so
// JSON shows []).
func top[T any](xs []T, n int, rank func(a, b T) int) []T {
	out := slices.Clone(xs)
	slices.SortFunc(out, rank)
	if out == nil {
		out = []T{}
	}
	return out[:min(n, len(out))]
}
