package app

import (
	"context"
	"errors"

	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	servercontrol "github.com/driftwatch/driftwatch/internal/server/control"
)

// control is the daemon as the HTTP server sees it (server.Control): it
// forwards to the daemon and maps the scheduler's and the run registry's
// errors onto the server's, so the server needs no list of which error
// means what. The embedded RemediationControl serves the remediation API
// (the server finds it with a type assertion); it must not be nil.
// The embedded SilenceControl (silence.Service.Control) serves the
// silences likewise.
type control struct {
	d *daemon
	server.RemediationControl
	server.SilenceControl
}

var (
	_ server.Control            = control{}
	_ server.RemediationControl = control{}
	_ server.SilenceControl     = control{}
)

// control is the daemon as the server sees it.
func (d *daemon) control() control {
	return control{d: d, RemediationControl: remediationControl{d.rem}, SilenceControl: d.silences.Control()}
}

// Workspaces lists the configured workspaces with their next run.
func (c control) Workspaces() []server.WorkspaceInfo {
	cfg := c.d.inv.Config()
	out := make([]server.WorkspaceInfo, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		next, _ := c.d.runs.Next(w.Name)
		out = append(out, server.WorkspaceInfo{Name: w.Name, Owner: w.Owner, Schedule: w.Schedule, Labels: w.Labels, NextRun: next})
	}
	return out
}

func (c control) Ready() error { return c.d.leader.Ready() }

func (c control) LiveLog(runID string) *runlog.Log { return c.d.runs.Live(runID) }

// Notifiers reports the outbox per configured notifier.
func (c control) Notifiers(ctx context.Context) ([]server.NotifierStatus, error) {
	stats, err := c.d.store.OutboxStats(ctx)
	if err != nil {
		return nil, err
	}
	cfg := c.d.inv.Config()
	out := make([]server.NotifierStatus, 0, len(cfg.Notifiers))
	for _, n := range cfg.Notifiers {
		s := stats[n.Name]
		ns := server.NotifierStatus{Name: n.Name, Pending: s.Pending, Dead: s.Dead, LastError: s.LastError}
		if !s.OldestPending.IsZero() {
			t := s.OldestPending
			ns.OldestPending = &t
		}
		out = append(out, ns)
	}
	return out, nil
}

// Trigger is the run lifecycle's manual trigger, its errors mapped by
// triggerError.
func (c control) Trigger(name string) (string, error) {
	id, err := c.d.runs.Trigger(name)
	if err != nil {
		return "", triggerError(id, err)
	}
	return id, nil
}

// triggerError maps an error of the daemon's trigger onto the server's:
// the scheduler does not know the workspace (404), this daemon does not
// schedule (503, with leader.ErrStandby's text, or the StandbyError's
// naming the leader), or the workspace is busy with
// the run id (409; id is "" when the run is not one the API shows). Any
// other error is returned as it is (500).
func triggerError(id string, err error) error {
	switch {
	case errors.Is(err, schedule.ErrUnknownJob):
		return servercontrol.As(err, server.ErrUnknownWorkspace)
	case errors.Is(err, leader.ErrStandby):
		return servercontrol.As(err, server.ErrUnavailable)
	case errors.Is(err, schedule.ErrBusy):
		return &server.BusyError{RunID: id, Err: err}
	}
	return err
}

// Cancel is the run lifecycle's cancel, its errors mapped by cancelError.
func (c control) Cancel(runID string) (bool, error) {
	queued, err := c.d.runs.Cancel(runID)
	if err != nil {
		return false, cancelError(err)
	}
	return queued, nil
}

// cancelError maps an error of the daemon's cancel onto the server's: a
// run that is not queued or running here (409 or 404), or a standby (503,
// with the text of leader.ErrStandby or the StandbyError naming the leader). Any
// other error is returned as it is (500).
func cancelError(err error) error {
	switch {
	case errors.Is(err, runlog.ErrNotRunning):
		return servercontrol.As(err, server.ErrNotRunning)
	case errors.Is(err, leader.ErrStandby):
		return servercontrol.As(err, server.ErrUnavailable)
	}
	return err
}
