package apitypes

import "github.com/driftwatch/driftwatch/internal/drift"

// Run is a run as a workspace's run list shows it.
type Run struct {
	ID              string       `json:"id"`
	Workspace       string       `json:"workspace"`
	Trigger         string       `json:"trigger"`
	Status          drift.Status `json:"status"`
	StartedAt       Time         `json:"started_at"`
	FinishedAt      Time         `json:"finished_at"`
	DurationSeconds *float64     `json:"duration_seconds"` // null while it runs
	Error           string       `json:"error"`
	Tool            string       `json:"tool"`
	Counts          drift.Counts `json:"counts"`
}

// RunDetail is one run with its findings and phases.
type RunDetail struct {
	Run
	Findings []Finding `json:"findings"`
	Phases   []Phase   `json:"phases"`
	URL      string    `json:"url"` // the run's page (absolute when the daemon has an external URL)
}

// Phase is how long one phase of a run took.
type Phase struct {
	Name            string  `json:"name"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// Queued answers a trigger (202): the run queued.
type Queued struct {
	Workspace string       `json:"workspace"`
	RunID     string       `json:"run_id"`
	Status    drift.Status `json:"status"`
}

// Cancelled answers a cancel (202): "cancelled" for a queued run (it
// never starts), "cancelling" for a running one.
type Cancelled struct {
	Run    string       `json:"run"`
	Status drift.Status `json:"status"`
}

// Error is every error answer; RunID names the run a busy workspace's
// trigger (409) waits for, when the daemon knows it.
type Error struct {
	Error string `json:"error"`
	RunID string `json:"run_id,omitempty"`
	// AcceptanceID names the running acceptance a 409 waits for.
	AcceptanceID string `json:"acceptance_id,omitempty"`
}

// LogEnd is the data of a run's log stream's last event ("end"): the
// run's verdict, or its state when it has none.
type LogEnd struct {
	Status drift.Status `json:"status"`
}
