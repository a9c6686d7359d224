package store

import (
	"context"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// StatsReader reads run history for trends (package stats), without
// loading it whole: runs are streamed one at a time. It is optional: the
// server finds it on its Store with a type assertion. store/sqlite
// implements it (on SQLite and PostgreSQL).
type StatsReader interface {
	// StatsRuns calls fn for every run with a verdict (status clean,
	// pending, validation, drift, forbidden or errored, FinishedAt set)
	// that started at or after q.Since, of the workspaces in q, one
	// workspace after the other (by name) and each workspace's runs by
	// StartedAt. Before a workspace's first such run it calls fn,
	// with Before set, for the runs before q.Since that say what state the
	// workspace was in (each at most once, by StartedAt):
	//   - the last successful run (not errored) before q.Since;
	//   - if that run saw drift or forbidden resources: the last successful
	//     run before it that saw neither (if any), and the first successful
	//     run after that one (the run that opened the drift still open);
	//   - the last run before q.Since, if it errored.
	// Every call reads one snapshot. An error from fn stops the reading
	// and is returned.
	StatsRuns(ctx context.Context, q StatsQuery, fn func(StatsRun) error) error
	// DriftedTypes counts, over the runs with the given IDs (unknown IDs
	// are ignored), the resource types of their counted drift and
	// forbidden findings (not ignored): in how many of the runs and in how
	// many distinct workspaces each type appears. Unordered.
	DriftedTypes(ctx context.Context, runIDs []string) ([]TypeCount, error)
	// ScanFound counts, per run with the given IDs, its counted (not
	// ignored) unmanaged and managed-twice findings: a scan's. Runs with
	// neither, and unknown IDs, are left out. Unordered.
	ScanFound(ctx context.Context, runIDs []string) ([]FoundCount, error)
	// UnmanagedTypes is DriftedTypes over the counted unmanaged findings
	// (Workspaces counts distinct scans, each a workspace of its own).
	UnmanagedTypes(ctx context.Context, runIDs []string) ([]TypeCount, error)
}

// StatsQuery selects the runs StatsRuns reads.
type StatsQuery struct {
	// Since is the window's start.
	Since time.Time
	// Workspaces limits the reading to these workspaces; nil or empty:
	// every workspace.
	Workspaces []string
}

// StatsRun is one run as StatsRuns gives it: no findings, phases or log.
type StatsRun struct {
	ID         string
	Workspace  string
	StartedAt  time.Time
	FinishedAt time.Time
	Status     drift.Status
	// Before marks a run from before StatsQuery.Since, given as context.
	Before bool
}

// TypeCount is how many runs, and how many distinct workspaces, have a
// finding of one resource type (of the kinds the method names).
type TypeCount struct {
	Type       string
	Runs       int
	Workspaces int
}

// FoundCount is what one scan run found: its counted unmanaged and
// managed-twice findings.
type FoundCount struct {
	RunID        string
	Unmanaged    int
	ManagedTwice int
}
