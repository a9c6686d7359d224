package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/store"
)

// queued records a run the scheduler queued (OnEnqueue): in the registry,
// with a live log that says it waits, and in the store as queued, so that
// it can be looked up, followed and cancelled before it starts. Remediation
// applies are not recorded here: the apply records its run when it starts,
// and a waiting apply is an approved remediation (rejecting it stops it).
// A run Recover queued again is in the store already.
func (m *Manager) queued(r schedule.QueuedRun) {
	if r.Trigger == TriggerRemediate {
		return
	}
	m.queueMu.Lock()
	defer m.queueMu.Unlock()
	m.mu.Lock()
	recovered := m.recovered[r.ID]
	delete(m.recovered, r.ID)
	m.mu.Unlock()
	l := m.newLog(r.Name)
	if recovered {
		l.Printf("== queued (trigger %s) at %s by a previous daemon process; queued again after its restart: waiting for a run slot ==",
			r.Trigger, r.QueuedAt.UTC().Format(time.RFC3339))
		m.runs.Add(r.ID, l, nil)
		return
	}
	l.Printf("== queued (trigger %s): waiting for a run slot ==", r.Trigger)
	m.runs.Add(r.ID, l, nil)
	run := store.Run{ID: r.ID, Workspace: r.Name, Trigger: r.Trigger, StartedAt: r.QueuedAt.UTC(), Status: store.RunQueued}
	if err := m.store.QueueRun(context.Background(), run); err != nil {
		m.log.Error("store: queue run", "workspace", r.Name, "run_id", r.ID, "err", err)
	}
}

// dropQueued records a queued run that ends without starting as cancelled,
// with the reason, and ends its log. A run that is not queued (it started,
// or was cancelled already) is left alone.
func (m *Manager) dropQueued(ctx context.Context, r schedule.QueuedRun, reason string) {
	if r.ID == "" || r.Trigger == TriggerRemediate {
		return // not a queued run (see queued)
	}
	log := m.log.With("workspace", r.Name, "run_id", r.ID)
	run := store.Run{ID: r.ID, Workspace: r.Name, Trigger: r.Trigger, StartedAt: r.QueuedAt.UTC(),
		FinishedAt: time.Now().UTC(), Status: store.RunCancelled, Error: reason}
	if err := m.store.FinishQueuedRun(context.WithoutCancel(ctx), run); err != nil {
		log.Warn("store: finish queued run", "err", err)
		return
	}
	l := m.runs.Live(r.ID)
	if l == nil { // queued's registration was lost: the log is this line
		l = m.newLog(r.Name)
	}
	l.Printf("== cancelled while queued: %s ==", reason)
	m.saveLog(ctx, log, r.ID, l, store.RunCancelled)
	m.runs.Remove(r.ID)
	log.Info("queued run cancelled; it never started", "reason", reason)
}

// skipQueued forgets a queued run that is skipped like a slot that comes
// while its workspace is busy: such a slot is no run, so its record is
// deleted and it is counted as a skipped slot.
func (m *Manager) skipQueued(ctx context.Context, r schedule.QueuedRun) {
	m.o.Metrics.Skipped(r.Name)
	if r.ID == "" {
		return
	}
	if err := m.store.DeleteQueuedRun(context.WithoutCancel(ctx), r.ID); err != nil {
		m.log.Warn("store: delete skipped queued run", "workspace", r.Name, "run_id", r.ID, "err", err)
	}
	if l := m.runs.Live(r.ID); l != nil {
		l.Close("skipped")
	}
	m.runs.Remove(r.ID)
}

// Trigger is the API's manual trigger: it returns the queued run's id, or
// a *refusal.BusyError wrapping schedule.ErrBusy that names the run
// already queued or running ("" while an adopted Job or a remediation
// apply of the workspace runs), schedule.ErrUnknownJob, or
// Options.Leader's error.
func (m *Manager) Trigger(workspace string) (string, error) {
	if err := m.leading(); err != nil {
		return "", err
	}
	m.mu.Lock()
	busy := m.adopted[workspace]
	m.mu.Unlock()
	if busy {
		return "", &refusal.BusyError{Err: fmt.Errorf("%w (adopted kubernetes job still running)", schedule.ErrBusy)}
	}
	r, err := m.sched.Queue(workspace, schedule.TriggerManual)
	switch {
	case err == nil:
		return r.ID, nil
	case !errors.Is(err, schedule.ErrBusy):
		return "", err
	case r.Trigger == TriggerRemediate:
		// Busy with an apply: its run is recorded under its own id.
		return "", &refusal.BusyError{Err: err}
	}
	return "", &refusal.BusyError{RunID: r.ID, Err: err}
}

// Queue queues a run of the workspace with trigger (the daemon's own
// triggers: initial, rerun, once), without the API's checks.
func (m *Manager) Queue(workspace, trigger string) error {
	return m.sched.Trigger(workspace, trigger)
}

// QueueApply queues a remediation's apply: it gets the workspace's slot,
// so no other run of the workspace is in flight while it applies.
func (m *Manager) QueueApply(workspace string) error {
	return m.sched.Trigger(workspace, TriggerRemediate)
}

// QueueUnchecked queues a run of every workspace that has never been
// checked, rather than waiting for its first slot (an @daily workspace
// would otherwise stay unknown for up to a day).
func (m *Manager) QueueUnchecked(workspaces []string) {
	var names []string
	m.mu.Lock()
	for _, w := range workspaces {
		// An adopted Job's workspace is busy until its outcome is known,
		// which is its first check: a queued run would only be skipped.
		if _, known := m.states[w]; !known && !m.adopted[w] {
			names = append(names, w)
		}
	}
	m.mu.Unlock()
	for _, n := range names {
		// ErrBusy: already queued (e.g. a run queued again after a restart).
		if err := m.sched.Trigger(n, "initial"); err != nil && !errors.Is(err, schedule.ErrBusy) {
			m.log.Warn("initial run not queued", "workspace", n, "err", err)
		}
	}
}

// Cancel is the API's cancel. A queued run leaves the queue and is
// recorded cancelled at once (true). A running one (scheduled, or not:
// an adopted Job's, a remediation's verification) has its ctx cancelled
// with runlog.ErrCancelled: the runner stops Terraform or deletes the Job,
// and the run is recorded cancelled. A run that is neither is
// runlog.ErrNotRunning; on a standby, Options.Leader's error.
func (m *Manager) Cancel(id string) (queued bool, err error) {
	if err := m.leading(); err != nil {
		// A standby runs nothing: the leader has the run.
		return false, err
	}
	m.queueMu.Lock()
	defer m.queueMu.Unlock()
	r, queued, err := m.sched.Cancel(id, runlog.ErrCancelled)
	switch {
	case errors.Is(err, schedule.ErrNoSuchRun):
		return false, m.runs.Cancel(id)
	case err != nil:
		return false, err
	case queued:
		m.dropQueued(context.Background(), r, "cancelled by request")
	}
	return queued, nil
}
