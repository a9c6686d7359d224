package control

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Control is the daemon's side of the server: the configured workspaces,
// readiness, and what the API may ask of the scheduler and of the runs in
// flight. Every method must be safe for concurrent use; they are called on
// every request that needs them, so a reloaded config shows at once.
//
// A Control that also implements RemediationControl serves the
// remediation API and the remediation parts of the pages (checked once, in
// server.New); one that does not has no such routes.
type Control interface {
	// Workspaces returns the configured workspaces.
	Workspaces() []WorkspaceInfo
	// Trigger queues a run of the named workspace now and returns its run
	// id. Its error chooses the answer: ErrUnknownWorkspace 404,
	// ErrBusy 409 (a *BusyError names the busy run), ErrUnavailable 503
	// with the error's text; any other 500.
	Trigger(name string) (runID string, err error)
	// Cancel stops a queued or running run: a queued one is cancelled at
	// once (queued true), a running one is asked to stop. Its error
	// chooses the answer: store.ErrNotFound 404; ErrNotRunning 409 for a
	// run the store knows and 404 otherwise; errors.ErrUnsupported 501
	// (no cancellation here); ErrUnavailable 503 with the error's text (a
	// standby); any other 500.
	Cancel(runID string) (queued bool, err error)
	// Ready returns nil when the daemon is ready to serve, or the reason
	// it is not (/readyz, GET /api/v1/status).
	Ready() error
	// LiveLog returns the log of a run in flight, or nil when the run is
	// not in flight here (finished, unknown, or run by another replica).
	// A run's log must be saved to the store (server.Options.Logs) before
	// LiveLog stops returning it, so a reader finds it in one place or
	// the other.
	LiveLog(runID string) *runlog.Log
	// Notifiers reports the alert outbox per notifier, for the status page
	// and GET /api/v1/notifiers (none: no notifiers section).
	Notifiers(ctx context.Context) ([]apitypes.NotifierStatus, error)
}

// The errors a Control returns, or wraps, to choose the API's answer. They
// are declared where the daemon refuses (refusal's, runlog's): its
// packages' own errors match them (schedule.ErrUnknownJob is an
// ErrUnknownWorkspace, leader.ErrStandby an ErrUnavailable, ...), so
// neither the server nor the daemon's wiring keeps a list of which error
// means what.
var (
	// ErrUnknownWorkspace is Trigger's error for a workspace the
	// scheduler does not know: 404 (refusal.ErrUnknownWorkspace).
	ErrUnknownWorkspace = refusal.ErrUnknownWorkspace
	// ErrBusy is Trigger's error for a workspace whose run is already
	// queued or running: 409. A *BusyError names that run
	// (refusal.ErrBusy).
	ErrBusy = refusal.ErrBusy
	// ErrUnavailable is Trigger's (and a standby's Cancel's) error while
	// this daemon does not schedule (a leader-election standby, starting or
	// stopping): 503 with the error's text, which should say why (and name
	// the leader when known) (refusal.ErrUnavailable).
	ErrUnavailable = refusal.ErrUnavailable
	// ErrNotRunning is Cancel's error for a run that is not queued or
	// running here: 409 for a run the store knows (it is finished), 404
	// otherwise (runlog.ErrNotRunning).
	ErrNotRunning = runlog.ErrNotRunning
)

// BusyError is an ErrBusy that names the run the workspace is busy with:
// the 409 carries its id (refusal.BusyError).
type BusyError = refusal.BusyError

// WorkspaceInfo is one configured workspace, as the server shows it.
type WorkspaceInfo struct {
	Name     string
	Owner    string
	Schedule string
	Labels   map[string]string
	NextRun  time.Time // zero: not scheduled
	// Held says why its runs wait: its concurrency groups held after a
	// throttled plan ("account=111 until 2026-11-29T10:04:05Z (2 throttled
	// plans in a row)"); "" when they do not.
	Held string
	// Scan marks a scans: entry's workspace (Trends counts it apart; its
	// unmanaged resources can be adopted: AdoptControl).
	Scan bool
}

// IncidentLister is the part of store.AlertStore the server reads.
type IncidentLister interface {
	Incidents(ctx context.Context, workspace string) ([]store.Incident, error)
}

// GroupReader is the part of store.GroupStore the server reads: the
// group incidents, each the drift of several workspaces that shares one
// cause. GroupIncident's error for an unknown id matches
// store.ErrNotFound.
type GroupReader interface {
	GroupIncidents(ctx context.Context, all bool) ([]store.GroupIncident, error)
	GroupIncident(ctx context.Context, id string) (store.GroupIncident, error)
}

// A store.GroupStore is a GroupReader: the daemon passes its store.
var _ GroupReader = store.GroupStore(nil)

// ErrHashMismatch is returned by RemediationControl.Approve when the
// approver was shown another change set than the one stored.
var ErrHashMismatch = errors.New("change_set_hash does not match the remediation's change set")

// RemediationControl is the daemon's remediation side, for the API and the
// pages. It is optional: the server serves it when server.Options.Control
// implements it too.
// Errors matching store.ErrNotFound answer 404, store.ErrConflict and
// ErrHashMismatch 409.
type RemediationControl interface {
	List(ctx context.Context, workspace string) ([]store.Remediation, error)
	Get(ctx context.Context, id string) (store.Remediation, error)
	// Approve approves a pending remediation; hash, if not "", must equal
	// its change set hash.
	Approve(ctx context.Context, id, hash string) (store.Remediation, error)
	Reject(ctx context.Context, id string) (store.Remediation, error)
	// Status reports the kill switch: enabled in the config, paused by API.
	Status(ctx context.Context) (enabled, paused bool, err error)
	SetPaused(ctx context.Context, paused bool) error
}
