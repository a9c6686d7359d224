// Package stats computes how drift trends: per UTC calendar day, how many
// workspaces were seen drifted, forbidden or errored, how many incidents
// opened and resolved (and how many group incidents opened), how long
// drift took to be detected and to be resolved, how long runs took and
// how often they errored; and, over the whole window, the workspaces and
// resource types that drift most. Scans (Run.Scan) count apart: per day,
// the unmanaged and managed-twice resources their last runs found; per
// scan; and the resource types found unmanaged most (ScanRuns,
// AddScanFound).
//
// It is pure code: no I/O and no clock (the window is an argument). The
// store streams finished runs into an Accumulator, one workspace after the
// other and each workspace's runs oldest first, so memory grows with the
// number of days and workspaces, never with the number of runs; the HTTP
// server turns the Report into JSON and charts.
//
// # Definitions
//
// Every number is derived from run history alone (the stored incidents keep
// only the latest incarnation of each workspace and class, so they cannot
// say how many opened last month), but the group incidents opened, which
// are no run's: each is counted on the UTC day it opened (AddGroupOpened). Confirmation delays (confirm_after) and
// silences are not applied: a trend counts what the runs saw.
//
//   - A run counts on the UTC day it finished. Only runs with a verdict
//     count (clean, pending, validation, drift, forbidden, errored): queued,
//     running, cancelled and interrupted runs do not.
//   - A workspace is drifted (forbidden, errored) on a day when at least one
//     of its runs that finished that day was drift (forbidden, errored).
//   - A drift incident is a stretch of successful runs that saw drift or
//     forbidden resources. It opens at the first such run after a
//     successful run that saw neither (or at a workspace's first run), and
//     resolves at the next successful run that sees neither. Errored runs
//     neither open nor resolve it: an error says nothing about drift.
//   - An error incident opens at an errored run after a run that was not
//     errored, and resolves at the next successful run.
//   - Time to detect is, for a drift incident, from the finish of the last
//     successful run that saw no drift to the finish of the run that opened
//     the incident: the longest the drift can have gone unseen. An incident
//     with no earlier clean run (a workspace's first run) has none.
//   - Time to resolve is from the finish of the run that opened a drift
//     incident to the finish of the run that resolved it.
//   - Both are counted on the day the incident opened (detect) or resolved
//     (resolve); an incident open at the window's start, whose detection
//     the store provides as context, counts when it resolves.
//   - Percentiles are nearest-rank: the p-th percentile of n sorted values
//     is the value at rank ceil(p/100 * n). Run durations are kept to three
//     significant digits of milliseconds (so a day's digest stays small):
//     a percentile is within 0.5% of the exact one.
//   - The error rate is errored runs over runs with a verdict.
//   - What scans found on a day is what each scan's last successful run
//     that finished that day found; over the window, its last one in it.
//
// It must not import store, server or any package with I/O.
package stats
