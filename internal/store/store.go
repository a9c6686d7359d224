// Package store defines what driftwatch remembers: run history and the
// current state of every workspace. The implementation (store/sqlite) keeps
// it in one embedded database file. Nothing here knows about runners,
// notifiers or the pipeline.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// ErrNotFound is returned when a run or workspace does not exist.
var ErrNotFound = errors.New("not found")

// Run statuses beyond drift.Status.
const (
	// RunRunning marks a run that has started and not finished.
	RunRunning drift.Status = "running"
	// RunInterrupted marks a run the process died during (found at startup).
	RunInterrupted drift.Status = "interrupted"
)

// Run is one execution of one workspace.
type Run struct {
	ID        string
	Workspace string
	// Trigger says why it ran: "schedule", "manual", "rerun" (after an
	// interrupted run), "once".
	Trigger    string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	Status     drift.Status
	Error      string
	Tool       string
	Findings   []drift.Finding
	Phases     []drift.Phase
}

// Counts tallies the run's findings.
func (r Run) Counts() drift.Counts { return drift.CountFindings(r.Findings) }

// WorkspaceState is the latest known state of a workspace.
type WorkspaceState struct {
	Workspace string
	Status    drift.Status
	// Since is when Status last changed.
	Since         time.Time
	LastRunID     string
	LastRunAt     time.Time // start of the last finished run
	LastSuccessAt time.Time // finish of the last run that was not errored
	Fingerprint   string    // drift.Fingerprint of the last successful run's findings
	Findings      []drift.Finding
	Error         string
	// ConsecutiveErrors counts errored runs since the last successful one.
	ConsecutiveErrors int
}

// Store persists runs and workspace state. Every method is safe for
// concurrent use; every write is durable when it returns.
type Store interface {
	// StartRun records a run as running.
	StartRun(ctx context.Context, r Run) error
	// FinishRun records the outcome of a started run and updates the
	// workspace's state in the same transaction, returning the state before
	// and after. An errored run keeps the previous findings and fingerprint
	// (an error says nothing about drift) but sets Status errored.
	FinishRun(ctx context.Context, r Run) (before, after WorkspaceState, err error)
	// MarkInterrupted turns every run still marked running (the process
	// died) into interrupted and returns them, oldest first.
	MarkInterrupted(ctx context.Context, at time.Time) ([]Run, error)
	// Run returns one run.
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists a workspace's runs, newest first, at most limit (0 = all).
	Runs(ctx context.Context, workspace string, limit int) ([]Run, error)
	// Workspace returns one workspace's state.
	Workspace(ctx context.Context, name string) (WorkspaceState, error)
	// Workspaces lists every workspace that has state, by name.
	Workspaces(ctx context.Context) ([]WorkspaceState, error)
	// Prune deletes finished runs beyond the newest keep per workspace and
	// those finished before olderThan (zero: no age limit), never the run a
	// workspace state points at. It returns how many it deleted.
	Prune(ctx context.Context, keep int, olderThan time.Time) (int, error)
	Close() error
}
