package stats

// What scans (config scans: entries) found, counted apart from the
// workspaces: the Accumulator keeps each scan's runs and each day's last
// successful one (ScanRuns), the caller reads what those runs found
// (AddScanFound), and the Report gets the scan figures (reportScans).

import (
	"cmp"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// ScanFigures are what scans (config scans: entries) saw. Of a day:
// Checked counts the scans with a run that finished that day, and Found
// sums what each one's last successful run of the day found (a scan
// without one that day adds nothing). Of the window (Totals): Checked
// counts the scans with a run in it, and Found sums what each one's last
// successful run in it found.
type ScanFigures struct {
	Checked int `json:"checked"`
	Found
}

// Found counts what scans found: counted (not ignored) unmanaged and
// managed-twice resources.
type Found struct {
	Unmanaged    int `json:"unmanaged"`
	ManagedTwice int `json:"managed_twice"`
}

func (f Found) plus(g Found) Found {
	return Found{Unmanaged: f.Unmanaged + g.Unmanaged, ManagedTwice: f.ManagedTwice + g.ManagedTwice}
}

// ScanCount is one scan over the window.
type ScanCount struct {
	Scan string `json:"scan"`
	// Runs counts its runs with a verdict, RunsErrored the errored ones.
	Runs        int `json:"runs"`
	RunsErrored int `json:"runs_errored"`
	// Found is what its last successful run in the window found; the
	// peaks are the most one day's last successful run found.
	Found
	PeakUnmanaged    int `json:"peak_unmanaged"`
	PeakManagedTwice int `json:"peak_managed_twice"`
}

// ScanTypeCount is how often scans found one resource type unmanaged: on
// how many scan-days the day's last successful run found one, and in how
// many scans.
type ScanTypeCount struct {
	Type     string `json:"resource_type"`
	ScanDays int    `json:"scan_days"`
	Scans    int    `json:"scans"`
}

// RunFound is what one scan run found (a run of ScanRuns).
type RunFound struct {
	RunID string
	Found
}

// scanAcc is a scan read: its runs with a verdict in the window, the
// errored ones, and each day's last successful run.
type scanAcc struct {
	name          string
	runs, errored int
	foundRun      map[int]string
}

// addScan reads a scan's run: counted on its day in the window (not
// before it), and the day's last successful one kept for ScanRuns.
func (a *Accumulator) addScan(w *wsAcc, r Run) {
	d := a.dayOf(r.Finished)
	if r.Before || d < 0 {
		return
	}
	w.marks[d] |= markChecked
	w.scan.runs++
	if r.Status == drift.StatusErrored {
		w.scan.errored++
		return
	}
	w.scan.foundRun[d] = r.ID
}

// ScanRuns ends the reading and returns, for every scan-day with a
// successful scan run, the day's last such run's ID: the runs whose
// findings make the scan figures (AddScanFound). Their order is
// unspecified.
func (a *Accumulator) ScanRuns() []string {
	a.flush()
	var ids []string
	for _, sc := range a.scans {
		for _, id := range sc.foundRun {
			ids = append(ids, id)
		}
	}
	return ids
}

// AddScanFound gives what ScanRuns' runs found (a run not in found found
// nothing) and the resource types found unmanaged over them (per type,
// ranked by TopScanTypes), for the Report to come.
func (a *Accumulator) AddScanFound(found []RunFound, types []ScanTypeCount) {
	if a.found == nil {
		a.found = map[string]Found{}
	}
	for _, f := range found {
		a.found[f.RunID] = f.Found
	}
	a.scanTypes = append(a.scanTypes, types...)
}

// reportScans adds the scan figures to rep: each scan-day's last
// successful run's findings to its day, each scan's last one to the
// totals.
func (a *Accumulator) reportScans(rep *Report) {
	if len(a.scans) == 0 {
		return
	}
	for i := range rep.Days {
		rep.Days[i].Scans = &ScanFigures{Checked: a.days[i].scans}
	}
	rep.Totals.Scans = &ScanFigures{Checked: len(a.scans)}
	counts := make([]ScanCount, 0, len(a.scans))
	for _, sc := range a.scans {
		c := ScanCount{Scan: sc.name, Runs: sc.runs, RunsErrored: sc.errored}
		last := -1
		for d, id := range sc.foundRun {
			f := a.found[id]
			rep.Days[d].Scans.Found = rep.Days[d].Scans.Found.plus(f)
			c.PeakUnmanaged = max(c.PeakUnmanaged, f.Unmanaged)
			c.PeakManagedTwice = max(c.PeakManagedTwice, f.ManagedTwice)
			if d > last {
				last, c.Found = d, f
			}
		}
		rep.Totals.Scans.Found = rep.Totals.Scans.Found.plus(c.Found)
		counts = append(counts, c)
	}
	rep.TopScans = TopScans(counts, TopN)
	rep.TopUnmanagedTypes = TopScanTypes(a.scanTypes, TopN)
}

// TopScans ranks scans by the unmanaged resources their last run found,
// then the managed-twice ones, then the peaks, then name, and keeps the
// first n.
func TopScans(ss []ScanCount, n int) []ScanCount {
	return top(ss, n, func(a, b ScanCount) int {
		return cmp.Or(
			cmp.Compare(b.Unmanaged, a.Unmanaged),
			cmp.Compare(b.ManagedTwice, a.ManagedTwice),
			cmp.Compare(b.PeakUnmanaged, a.PeakUnmanaged),
			cmp.Compare(b.PeakManagedTwice, a.PeakManagedTwice),
			cmp.Compare(a.Scan, b.Scan),
		)
	})
}

// TopScanTypes ranks resource types found unmanaged by scan-days, then
// scans, then name, and keeps the first n.
func TopScanTypes(ts []ScanTypeCount, n int) []ScanTypeCount {
	return top(ts, n, func(a, b ScanTypeCount) int {
		return cmp.Or(
			cmp.Compare(b.ScanDays, a.ScanDays),
			cmp.Compare(b.Scans, a.Scans),
			cmp.Compare(a.Type, b.Type),
		)
	})
}
