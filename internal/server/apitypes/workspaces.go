package apitypes

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Workspace is a configured workspace with its state.
type Workspace struct {
	Name          string            `json:"name"`
	Owner         string            `json:"owner"`
	Labels        map[string]string `json:"labels"`
	Schedule      string            `json:"schedule"`
	Status        drift.Status      `json:"status"`
	Since         Time              `json:"since"`
	LastRunAt     Time              `json:"last_run_at"`
	LastSuccessAt Time              `json:"last_success_at"`
	NextRun       Time              `json:"next_run"`
	// Held says why the workspace's runs wait: its concurrency groups held
	// after a throttled plan; "" when they do not.
	Held              string       `json:"held,omitempty"`
	LastRunID         string       `json:"last_run_id"`
	ConsecutiveErrors int          `json:"consecutive_errors"`
	Counts            drift.Counts `json:"counts"`
	Error             string       `json:"error"`
	URL               string       `json:"url"`
}

// WorkspaceDetail is one workspace with its findings and incidents.
type WorkspaceDetail struct {
	Workspace
	Findings  []Finding  `json:"findings"`
	Incidents []Incident `json:"incidents"`
}

// WorkspacePage is one page of the workspace list.
type WorkspacePage struct {
	Workspaces []Workspace `json:"workspaces"`
	// Total counts the workspaces the filters select, over every page.
	Total   int `json:"total"`
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
	Pages   int `json:"pages"`
}

// Incident is an open or confirming incident: its severity and the
// severity rule that set it (empty: its class's severity).
type Incident struct {
	Key          string    `json:"key"`
	Class        string    `json:"class"`
	State        string    `json:"state"`
	Severity     string    `json:"severity"`
	SeverityRule string    `json:"severity_rule"`
	Since        time.Time `json:"since"`
	NotifiedAt   time.Time `json:"notified_at,omitzero"`
	Findings     int       `json:"findings"`
	// Accepted is set on a drift incident whose drift was accepted as
	// code and proposed after it opened: it waits for the merge, and
	// resolves when the merged code's next check is clean.
	Accepted *IncidentAcceptance `json:"accepted,omitempty"`
}

// IncidentAcceptance is the proposal a drift incident waits for.
type IncidentAcceptance struct {
	AcceptanceID string `json:"acceptance_id"`
	State        string `json:"state"` // "waiting for merge"
	URL          string `json:"url"`
	Number       int    `json:"number"`
	Branch       string `json:"branch"`
}

// Finding is one finding of a workspace or a run: attribute paths, never
// values.
type Finding struct {
	Kind       drift.Kind `json:"kind"`
	Address    string     `json:"address"`
	Type       string     `json:"type"`
	Action     string     `json:"action"`
	Attributes []string   `json:"attributes"`
	SeenIn     []string   `json:"seen_in"`
	Ignored    bool       `json:"ignored"`
	// Detail explains a backend finding (e.g. "mode 0644: chmod 600").
	Detail string `json:"detail,omitempty"`
	// Window (drift) is when the change happened: after from (the last
	// clean check; absent when unknown), no later than to (the first
	// check that saw it).
	Window *drift.Window `json:"window,omitempty"`
	// Attribution (drift) is who changed it, as the workspace's
	// attribution command answered; AttributionError why it could not.
	Attribution      *drift.Attribution `json:"attribution,omitempty"`
	AttributionError string             `json:"attribution_error,omitempty"`
	// Commit (pending, git sources) is the commit that last changed the
	// resource's block.
	Commit *drift.Commit `json:"commit,omitempty"`
	// ManagedBy (a scan's managed_twice) is each state holding the
	// resource, "WORKSPACE: ADDRESS".
	ManagedBy []string `json:"managed_by,omitempty"`
}
