package run

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
)

// runOne is the scheduler's job: one run of one workspace, recorded in the
// store. A run cut short by shutdown is left "running" in the store, so the
// next start errors it and runs the workspace again (or, in kubernetes
// mode with its Job still running, adopts the Job and finishes the run).
func (m *Manager) runOne(ctx context.Context, r schedule.QueuedRun) {
	if r.Trigger == TriggerRemediate {
		m.remediate(ctx, r)
		return
	}
	m.mu.Lock()
	busy := m.adopted[r.Name]
	m.mu.Unlock()
	if busy {
		m.log.Info("run skipped: an adopted Job of the workspace is still running", "workspace", r.Name, "trigger", r.Trigger, "run_id", r.ID)
		m.skipQueued(ctx, r)
		return
	}
	m.detect(ctx, r, m.o.Auditor, nil)
}

// remediate is a remediation's apply run (Remediation.Apply) with a live
// log under the run's id, like a detection's: the API's log readers follow
// it while it applies, and the store keeps it once the run is recorded.
// Its cancel goes through the scheduler, which holds the run's context.
func (m *Manager) remediate(ctx context.Context, r schedule.QueuedRun) {
	if m.o.Remediation == nil {
		return
	}
	if r.ID == "" {
		r.ID = newID()
	}
	l := runlog.New(m.o.Inventory.MaxLogBytes(), nil)
	m.runs.Add(r.ID, l, nil)
	defer m.runs.Remove(r.ID)
	status := m.o.Remediation.Apply(ctx, r.Name, r.ID, l)
	if status == "" {
		l.Close("") // no apply run was recorded: nothing to keep
		return
	}
	m.saveLog(ctx, m.log.With("workspace", r.Name, "run_id", r.ID), r.ID, l, status)
}

// Detect is a detection run outside the queue (the verification after a
// remediation, in the remediation's slot).
func (m *Manager) Detect(ctx context.Context, workspace, trigger string) {
	m.detect(ctx, schedule.QueuedRun{Name: workspace, Trigger: trigger}, m.o.Auditor, nil)
}

// Adopted is a Job a previous daemon started that this one awaits
// (runner.Adopted: the runner that adopts it hands it over in that form).
type Adopted = runner.Adopted

// Adopting marks the workspaces of adopted Jobs busy until AwaitAdopted
// returns: their scheduled runs are skipped and manual ones refused.
func (m *Manager) Adopting(as []Adopted) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range as {
		m.adopted[a.Workspace] = true
	}
}

// AwaitAdopted records the outcome of a Job a previous daemon started. A
// detection Job's run was left running by Recover (its id was kept), so
// its outcome finishes that run, under its own id. A remediation Job's
// outcome is recorded on its remediation and the verification detection
// that follows is a new run with trigger "adopted", as is a detection Job's
// outcome when the store has no running run with its id.
func (m *Manager) AwaitAdopted(ctx context.Context, a Adopted) {
	m.log.Info("awaiting adopted job", "workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job)
	r := schedule.QueuedRun{Name: a.Workspace, Trigger: "adopted"}
	var resume *store.Run
	if !a.Remediation {
		run, err := m.store.Run(ctx, a.RunID)
		switch {
		case err != nil:
			m.log.Warn("adopted job: its run is not in the store; recording its outcome as a new run",
				"workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job, "err", err)
		case run.Status != store.RunRunning || run.Workspace != a.Workspace:
			m.log.Warn("adopted job: its run is not running; recording its outcome as a new run",
				"workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job, "status", run.Status, "run_workspace", run.Workspace)
		default:
			resume = &run
			r = schedule.QueuedRun{ID: run.ID, Name: a.Workspace, Trigger: run.Trigger}
		}
	}
	m.detect(ctx, r, &pipeline.Auditor{Runner: a.Runner, Logger: m.log, Fleet: m.o.Auditor.Fleet}, resume)
	m.mu.Lock()
	delete(m.adopted, a.Workspace)
	m.mu.Unlock()
}

// detect runs and records one detection run: the queued run r (its
// record and live log exist), or a new run when r has no ID. With resume
// (r.ID is its ID), the run is an adopted Job's that a previous daemon
// recorded as running: it is not started again but finished.
func (m *Manager) detect(ctx context.Context, r schedule.QueuedRun, auditor *pipeline.Auditor, resume *store.Run) {
	if m.stopping.Load() || (ctx.Err() != nil && r.ID == "" && resume == nil) {
		// Shutting down or lost the Lease: start nothing. A queued run's
		// record stays queued and is queued again at the next start; a
		// detection asked for outside the queue (a remediation's
		// verification) is recorded queued, for the next start to run.
		if r.ID == "" && resume == nil && !errors.Is(context.Cause(ctx), runlog.ErrCancelled) {
			m.queueForNextStart(ctx, r)
		}
		return
	}
	name, trigger := r.Name, r.Trigger
	t, ok := m.o.Inventory.Target(name)
	if !ok && resume == nil {
		m.dropQueued(ctx, r, "the workspace was removed from the config while the run was queued")
		return
	}
	if !ok {
		// An adopted Job of a workspace no longer in the config: its run
		// ends interrupted.
		run := *resume
		run.FinishedAt, run.Status = time.Now().UTC(), store.RunInterrupted
		run.Error = "the workspace was removed from the config while its adopted Job ran"
		if err := m.store.FinishRunOnly(context.WithoutCancel(ctx), run); err != nil {
			m.log.Warn("store: finish adopted run", "workspace", name, "run_id", run.ID, "err", err)
		}
		return
	}
	if errors.Is(context.Cause(ctx), runlog.ErrCancelled) && resume == nil {
		// Cancelled just as the scheduler dispatched it: start nothing.
		m.dropQueued(ctx, r, "cancelled by request")
		return
	}
	t.Request.RunID = r.ID
	if r.ID == "" {
		t.Request.RunID = newID()
	}
	log := m.log.With("workspace", name, "run_id", t.Request.RunID)
	// The run's own log (redacted by the runner; head and tail kept),
	// created when it was queued, and a cancel function for Cancel.
	runLog := m.runs.Live(t.Request.RunID)
	if runLog == nil {
		runLog = m.newLog(name)
	}
	if t.Request.LogPlanText && !runlog.HoldsValues(runLog.Bytes()) {
		// Opted in after this log began without the notice (a reload while
		// queued): its readers were not told to authenticate, so no values.
		t.Request.LogPlanText = false
	}
	run := store.Run{ID: t.Request.RunID, Workspace: name, Trigger: trigger, StartedAt: time.Now().UTC(), Status: store.RunRunning}
	switch {
	case resume != nil:
		// Started by a previous daemon: it goes on under its id.
		run.StartedAt = resume.StartedAt
		log.Info("run adopted", "trigger", trigger)
		runLog.Printf("== adopted: its Kubernetes Job was started by a previous daemon (started %s); awaiting its result ==",
			run.StartedAt.UTC().Format(time.RFC3339))
	default:
		// Recorded even if a cancel arrives meanwhile: the run then ends
		// at once, recorded cancelled.
		err := m.storeRetry(ctx, log, "the run's start", func() error {
			return m.store.StartQueuedRun(context.WithoutCancel(ctx), run)
		})
		if err != nil {
			log.Error("store: start run", "err", err)
			runLog.Close(string(drift.StatusErrored))
			m.runs.Remove(run.ID)
			return
		}
		log.Info("run started", "trigger", trigger)
		if r.ID != "" {
			runLog.Printf("== started after %s in the queue ==", run.StartedAt.Sub(r.QueuedAt).Round(time.Millisecond))
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m.runs.Add(run.ID, runLog, cancel)
	defer m.runs.Remove(run.ID)
	t.Request.Log = runLog
	defer func() {
		// A bug must not leave the run "running" and its log followers
		// waiting forever: record it errored, then let the scheduler's
		// recovery log the panic.
		if p := recover(); p != nil {
			run.FinishedAt = time.Now().UTC()
			run.Status, run.Error = drift.StatusErrored, "internal error: the run panicked (see the daemon log)"
			_ = m.store.FinishRunOnly(context.WithoutCancel(ctx), run)
			m.saveLog(ctx, log, run.ID, runLog, drift.StatusErrored)
			panic(p)
		}
	}()
	t.Prior = m.prior(ctx, log, name)
	res, tfPlan := auditor.CheckPlan(runCtx, t)
	if errors.Is(context.Cause(runCtx), runlog.ErrCancelled) {
		// Cancelled: neither clean nor errored; state and incidents stay.
		run.FinishedAt = time.Now().UTC()
		run.Status, run.Error, run.Tool, run.Phases = store.RunCancelled, "cancelled by request", res.Tool, res.Phases
		err := m.storeRetry(ctx, log, "the cancelled run", func() error {
			return m.store.FinishRunOnly(context.WithoutCancel(ctx), run)
		})
		if err != nil {
			log.Error("store: finish cancelled run", "err", err)
		}
		m.saveLog(ctx, log, run.ID, runLog, store.RunCancelled)
		log.Info("run cancelled")
		return
	}
	if ctx.Err() != nil || m.stopping.Load() {
		// Kubernetes mode: the Job keeps running and the next daemon
		// adopts it; locally the next start records the run errored.
		log.Info("run interrupted by shutdown; it will be re-run at the next start")
		return
	}
	if res.Status == drift.StatusErrored && drift.Throttled(res.Error) {
		if holds := m.sched.Throttle(name); len(holds) > 0 {
			m.throttled(ctx, log, run, res, runLog, holds)
			return
		}
	} else {
		m.sched.Unthrottled(name)
	}
	run.FinishedAt = res.Started.Add(res.Duration).UTC()
	run.Status, run.Error, run.Tool, run.Findings, run.Phases = res.Status, res.Error, res.Tool, res.Findings, res.Phases
	run.Providers, run.Managed = res.Providers, res.Managed
	// Record even if the daemon is stopping: the result is already paid
	// for. Incident changes and their notifications are written in the same
	// transaction, so a crash can lose neither.
	// A storage failure (disk full, read-only file system) keeps the
	// verdict here and retries until it is written: the workspace stays
	// busy meanwhile, so its next slots are skipped rather than run twice.
	var after store.WorkspaceState
	err := m.storeRetry(ctx, log, "the run's verdict", func() error {
		var err error
		_, after, err = m.store.FinishRunWithOutcome(context.WithoutCancel(ctx), run, m.o.Incidents.Outcome(name, time.Now().UTC(), run.ID))
		return err
	})
	if err != nil {
		// Stopping (the next start errors the run and runs the workspace
		// again), or an error no retry can fix.
		log.Error("store: finish run: the verdict is not recorded", "status", run.Status, "err", err)
		runLog.Close(string(drift.StatusErrored))
		return
	}
	m.mu.Lock()
	m.states[name] = after
	m.mu.Unlock()
	if m.o.Recorded != nil {
		m.o.Recorded() // after the state: Recorded may read it (State)
	}
	m.saveLog(ctx, log, run.ID, runLog, run.Status)
	if m.o.Remediation != nil {
		m.o.Remediation.AfterDetect(ctx, t.Name, run.ID, res, tfPlan)
	}
	m.countRun(res.Status, res)
	m.mu.Lock()
	onResult := m.onResult
	m.mu.Unlock()
	if onResult != nil {
		onResult(res)
	}
}

// Bounds of storeRetry's backoff.
var (
	storeRetryFirst   = time.Second
	storeRetryLongest = 30 * time.Second
)

// storeRetry calls write until it succeeds, retrying with backoff while it
// fails because the storage is unavailable (store.ErrUnavailable: disk
// full, a read-only file system) and ctx lasts: what is being written (a
// verdict Terraform already paid for) is kept rather than lost. Any other
// error is returned at once, as is the last one when ctx ends.
func (m *Manager) storeRetry(ctx context.Context, log *slog.Logger, what string, write func() error) error {
	delay := storeRetryFirst
	for attempt := 1; ; attempt++ {
		err := write()
		switch {
		case err == nil:
			if attempt > 1 {
				log.Info("store: recorded "+what+" after the storage came back", "attempts", attempt)
			}
			return nil
		case !errors.Is(err, store.ErrUnavailable):
			return err
		}
		log.Error("store: cannot record "+what+"; retrying", "err", err, "attempt", attempt, "retry_in", delay)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, storeRetryLongest)
	}
}

// queueForNextStart records r, a detection asked for outside the queue
// while the daemon stops, as a queued run: Recover queues it again at the
// next start, so the workspace is checked then rather than at its next
// slot (an apply it followed may have changed everything).
func (m *Manager) queueForNextStart(ctx context.Context, r schedule.QueuedRun) {
	run := store.Run{ID: newID(), Workspace: r.Name, Trigger: r.Trigger, StartedAt: time.Now().UTC(), Status: store.RunQueued}
	if err := m.store.QueueRun(context.WithoutCancel(ctx), run); err != nil {
		m.log.Warn("store: queue a detection for the next start", "workspace", r.Name, "trigger", r.Trigger, "err", err)
		return
	}
	m.log.Info("stopping: detection queued for the next start", "workspace", r.Name, "trigger", r.Trigger, "run_id", run.ID)
}

// countRun counts a finished run as status in the metrics, with its
// phases and its whole duration.
func (m *Manager) countRun(status drift.Status, res drift.Result) {
	m.o.Metrics.RunFinished(status, append(res.Phases, drift.Phase{Name: "total", Duration: res.Duration}))
}

// prior is what the store holds of a workspace before its run, for the
// pipeline to date drift and keep what earlier runs learnt of it: the
// last successful run's findings and when that run checked (its start;
// its finish when runs errored since, the state's only time of it). It
// is empty (every drift first seen, with no start) when the workspace
// never finished a run or the store cannot say.
func (m *Manager) prior(ctx context.Context, log *slog.Logger, name string) *pipeline.Prior {
	st, err := m.store.Workspace(context.WithoutCancel(ctx), name)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			log.Warn("store: the workspace's state before the run; its drift is dated from this run only", "err", err)
		}
		return &pipeline.Prior{}
	}
	checked := st.LastRunAt
	if st.Status == drift.StatusErrored {
		checked = st.LastSuccessAt
	}
	return &pipeline.Prior{Findings: st.Findings, CheckedAt: checked}
}
