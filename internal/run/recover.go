package run

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule"
)

// newID mints the id of a run that was not queued (a verification).
func newID() string { return drift.NewRunID() }

// Recover settles what a previous process left, before this one queues
// anything (the API refuses runs until the daemon leads): store.RecoverRuns
// errors the runs it was running ("daemon restarted"; their processes were
// killed with it, or swept at start) and their workspaces are run again
// (trigger "rerun"); the runs it had queued are queued again under their
// own ids and keep their queue time. Runs whose id is in keep (adopted
// Jobs' runs) stay running. Workspaces of adopted Jobs (Adopting) get
// neither: their queued runs end cancelled.
func (m *Manager) Recover(ctx context.Context, keep ...string) error {
	rec, err := m.store.RecoverRuns(ctx, time.Now(), keep...)
	if err != nil {
		return err
	}
	queued := map[string]bool{}
	for _, r := range rec.Queued {
		qr := schedule.QueuedRun{ID: r.ID, Name: r.Workspace, Trigger: r.Trigger, QueuedAt: r.StartedAt}
		m.mu.Lock()
		busy := m.adopted[r.Workspace]
		if !busy {
			m.recovered[r.ID] = true
		}
		m.mu.Unlock()
		if busy {
			m.dropQueued(ctx, qr, "a Job of the workspace that the previous daemon process started was still running")
			continue
		}
		_, err := m.sched.Requeue(qr)
		if err != nil {
			m.mu.Lock()
			delete(m.recovered, r.ID)
			m.mu.Unlock()
		}
		switch {
		case err == nil:
			queued[r.Workspace] = true
			m.log.Info("queued again after a restart", "workspace", r.Workspace, "run_id", r.ID, "trigger", r.Trigger)
		case errors.Is(err, schedule.ErrUnknownJob):
			m.dropQueued(ctx, qr, "the workspace was removed from the config while the run was queued")
		case errors.Is(err, schedule.ErrBusy):
			m.dropQueued(ctx, qr, "another run of the workspace was queued already")
		default:
			m.log.Warn("queued run not queued again", "workspace", r.Workspace, "run_id", r.ID, "err", err)
		}
	}
	for _, r := range rec.Errored {
		m.mu.Lock()
		skip := queued[r.Workspace] || m.adopted[r.Workspace]
		m.mu.Unlock()
		if skip {
			continue
		}
		queued[r.Workspace] = true
		m.log.Info("re-running a run the previous daemon process left unfinished", "workspace", r.Workspace, "run_id", r.ID)
		if err := m.sched.Trigger(r.Workspace, "rerun"); err != nil && !errors.Is(err, schedule.ErrUnknownJob) {
			m.log.Warn("re-run not queued", "workspace", r.Workspace, "err", err)
		}
	}
	return nil
}
