package app

import (
	"context"
	"errors"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
)

// control is the daemon as the HTTP server sees it (server.Control): it
// forwards to the daemon and maps the scheduler's and the run registry's
// errors onto the server's, so the server needs no list of which error
// means what. The embedded RemediationControl serves the remediation API
// (the server finds it with a type assertion); it must not be nil.
type control struct {
	d *daemon
	server.RemediationControl
}

var (
	_ server.Control            = control{}
	_ server.RemediationControl = control{}
)

func (c control) Workspaces() []server.WorkspaceInfo { return c.d.workspaceInfo() }

func (c control) Ready() error { return c.d.ready() }

func (c control) LiveLog(runID string) *runlog.Log { return c.d.runs.Live(runID) }

func (c control) Notifiers(ctx context.Context) ([]server.NotifierStatus, error) {
	return c.d.notifierStatus(ctx)
}

// Trigger is the daemon's manual trigger (trigger), its errors mapped by
// triggerError.
func (c control) Trigger(name string) (string, error) {
	id, err := c.d.trigger(name)
	if err != nil {
		return "", triggerError(id, err)
	}
	return id, nil
}

// triggerError maps an error of the daemon's trigger onto the server's:
// the scheduler does not know the workspace (404), this daemon does not
// schedule (503, with errStandby's text, or the standbyError's naming the
// leader), or the workspace is busy with
// the run id (409; id is "" when the run is not one the API shows). Any
// other error is returned as it is (500).
func triggerError(id string, err error) error {
	switch {
	case errors.Is(err, schedule.ErrUnknownJob):
		return serverError{err, server.ErrUnknownWorkspace}
	case errors.Is(err, errStandby):
		return serverError{err, server.ErrUnavailable}
	case errors.Is(err, schedule.ErrBusy):
		return &server.BusyError{RunID: id, Err: err}
	}
	return err
}

// Cancel is the daemon's cancel, its errors mapped by cancelError.
func (c control) Cancel(runID string) (bool, error) {
	queued, err := c.d.cancel(runID)
	if err != nil {
		return false, cancelError(err)
	}
	return queued, nil
}

// cancelError maps an error of the daemon's cancel onto the server's: a
// run that is not queued or running here (409 or 404), or a standby (503,
// with the text of errStandby or the standbyError naming the leader). Any
// other error is returned as it is (500).
func cancelError(err error) error {
	switch {
	case errors.Is(err, runlog.ErrNotRunning):
		return serverError{err, server.ErrNotRunning}
	case errors.Is(err, errStandby):
		return serverError{err, server.ErrUnavailable}
	}
	return err
}

// serverError is err, with its text unchanged (the API shows the text of
// some, e.g. errStandby's), that also matches the server's error kind.
type serverError struct{ err, kind error }

func (e serverError) Error() string   { return e.err.Error() }
func (e serverError) Unwrap() []error { return []error{e.err, e.kind} }
