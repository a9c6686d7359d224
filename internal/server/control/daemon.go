package control

import (
	"context"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Daemon is a Control made of the daemon's parts: it forwards to them and
// turns the current config into the server's lists. The parts' errors
// are this package's already (refusal's, runlog's), so it maps none.
// RemediationControl, SilenceControl, AcceptControl and AdoptControl
// must not be nil: the server finds them on the Control with a type
// assertion.
type Daemon struct {
	// Config is the current config (read at every call: a reload shows
	// at once).
	Config func() *config.Config
	// Runs is the run lifecycle (run.Manager).
	Runs Runs
	// Leader says whether the daemon schedules (leader.State): Ready is
	// nil while it does, else why not.
	Leader interface{ Ready() error }
	// Outbox counts the undelivered messages per notifier (the store).
	Outbox interface {
		OutboxStats(ctx context.Context) (map[string]store.OutboxCounts, error)
	}
	RemediationControl
	SilenceControl
	AcceptControl
	AdoptControl
}

// Runs is the run lifecycle as Daemon sees it.
type Runs interface {
	Next(workspace string) (time.Time, bool)
	Trigger(workspace string) (string, error)
	Cancel(runID string) (queued bool, err error)
	Live(runID string) *runlog.Log
	Held(workspace string) string
}

var (
	_ Control            = Daemon{}
	_ RemediationControl = Daemon{}
	_ SilenceControl     = Daemon{}
	_ AcceptControl      = Daemon{}
	_ AdoptControl       = Daemon{}
)

// Workspaces lists the configured workspaces with their next run.
func (d Daemon) Workspaces() []WorkspaceInfo {
	cfg := d.Config()
	out := make([]WorkspaceInfo, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		next, _ := d.Runs.Next(w.Name)
		out = append(out, WorkspaceInfo{Name: w.Name, Owner: w.Owner, Schedule: w.Schedule, Labels: w.Labels, NextRun: next,
			Held: d.Runs.Held(w.Name), Scan: w.Scan != nil})
	}
	return out
}

// Ready is Leader.Ready.
func (d Daemon) Ready() error { return d.Leader.Ready() }

// Trigger is Runs.Trigger.
func (d Daemon) Trigger(name string) (string, error) { return d.Runs.Trigger(name) }

// Cancel is Runs.Cancel.
func (d Daemon) Cancel(runID string) (bool, error) { return d.Runs.Cancel(runID) }

// LiveLog is Runs.Live.
func (d Daemon) LiveLog(runID string) *runlog.Log { return d.Runs.Live(runID) }

// Notifiers reports the outbox per configured notifier.
func (d Daemon) Notifiers(ctx context.Context) ([]apitypes.NotifierStatus, error) {
	stats, err := d.Outbox.OutboxStats(ctx)
	if err != nil {
		return nil, err
	}
	cfg := d.Config()
	out := make([]apitypes.NotifierStatus, 0, len(cfg.Notifiers))
	for _, n := range cfg.Notifiers {
		s := stats[n.Name]
		ns := apitypes.NotifierStatus{Name: n.Name, Pending: s.Pending, Dead: s.Dead, LastError: s.LastError}
		if !s.OldestPending.IsZero() {
			t := s.OldestPending
			ns.OldestPending = &t
		}
		out = append(out, ns)
	}
	return out, nil
}
