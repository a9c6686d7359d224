package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
)

// runOne is the scheduler's job: one run of one workspace, recorded in the
// store. A run cut short by shutdown is left "running" in the store, so the
// next start marks it interrupted and runs it again (or, in kubernetes mode
// with its Job still running, adopts the Job and finishes the run).
func (d *daemon) runOne(ctx context.Context, r schedule.QueuedRun) {
	if r.Trigger == triggerRemediate {
		d.rem.Apply(ctx, r.Name)
		return
	}
	d.detectRun(ctx, r)
}

// queued records a run the scheduler queued (OnEnqueue): in the registry,
// with a live log that says it waits, and in the store as queued, so that
// it can be looked up, followed and cancelled before it starts. Remediation
// applies are not recorded here: apply records its run when it starts, and
// a waiting apply is an approved remediation (rejecting it stops it).
func (d *daemon) queued(r schedule.QueuedRun) {
	if r.Trigger == triggerRemediate {
		return
	}
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	l := d.newRunLog(r.Name)
	l.Printf("== queued (trigger %s): waiting for a run slot ==", r.Trigger)
	d.runs.Add(r.ID, l, nil)
	run := store.Run{ID: r.ID, Workspace: r.Name, Trigger: r.Trigger, StartedAt: r.QueuedAt.UTC(), Status: store.RunQueued}
	if err := d.store.QueueRun(context.Background(), run); err != nil {
		d.log.Error("store: queue run", "workspace", r.Name, "run_id", r.ID, "err", err)
	}
}

// newRunLog is a run's log. For a workspace with log_plan_text its first
// line is runlog.ValuesNotice, so the server serves it only to an
// authenticated reader, from the first line on.
func (d *daemon) newRunLog(workspace string) *runlog.Log {
	l := runlog.New(d.cfg.Load().Store.MaxLogBytes, nil)
	if t, ok := (*d.targets.Load())[workspace]; ok && t.Request.LogPlanText {
		l.Printf("%s", runlog.ValuesNotice)
	}
	return l
}

// dropQueued records a queued run that ends without starting as cancelled,
// with the reason, and ends its log. A run that is not queued (it started,
// or was cancelled already) is left alone.
func (d *daemon) dropQueued(ctx context.Context, r schedule.QueuedRun, reason string) {
	if r.ID == "" || r.Trigger == triggerRemediate {
		return // not a queued run (see queued)
	}
	log := d.log.With("workspace", r.Name, "run_id", r.ID)
	run := store.Run{ID: r.ID, Workspace: r.Name, Trigger: r.Trigger, StartedAt: r.QueuedAt.UTC(),
		FinishedAt: time.Now().UTC(), Status: store.RunCancelled, Error: reason}
	if err := d.store.FinishQueuedRun(context.WithoutCancel(ctx), run); err != nil {
		log.Warn("store: finish queued run", "err", err)
		return
	}
	l := d.runs.Live(r.ID)
	if l == nil { // queued's registration was lost: the log is this line
		l = d.newRunLog(r.Name)
	}
	l.Printf("== cancelled while queued: %s ==", reason)
	d.saveRunLog(ctx, log, r.ID, l, store.RunCancelled)
	d.runs.Remove(r.ID)
	log.Info("queued run cancelled; it never started", "reason", reason)
}

// skipQueued forgets a queued run that is skipped like a slot that comes
// while its workspace is busy: such a slot is no run, so its record is
// deleted and it is counted as a skipped slot.
func (d *daemon) skipQueued(ctx context.Context, r schedule.QueuedRun) {
	d.metrics.Skipped(r.Name)
	if r.ID == "" {
		return
	}
	if err := d.store.DeleteQueuedRun(context.WithoutCancel(ctx), r.ID); err != nil {
		d.log.Warn("store: delete skipped queued run", "workspace", r.Name, "run_id", r.ID, "err", err)
	}
	if l := d.runs.Live(r.ID); l != nil {
		l.Close("skipped")
	}
	d.runs.Remove(r.ID)
}

// cancel is the API's cancel. A queued run leaves the queue and is
// recorded cancelled at once (true). A running one (scheduled, or not:
// an adopted Job's, a remediation's verification) has its ctx cancelled
// with runlog.ErrCancelled: the runner stops Terraform or deletes the Job,
// and detectWith records it cancelled.
func (d *daemon) cancel(id string) (queued bool, err error) {
	if d.electing && !d.leading.Load() {
		// A standby runs nothing: the leader has the run.
		return false, d.notLeading()
	}
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	r, queued, err := d.sched.Cancel(id, runlog.ErrCancelled)
	switch {
	case errors.Is(err, schedule.ErrNoSuchRun):
		return false, d.runs.Cancel(id)
	case err != nil:
		return false, err
	case queued:
		d.dropQueued(context.Background(), r, "cancelled by request")
	}
	return queued, nil
}

// detect is a detection run outside the queue (the verification after a
// remediation, in the remediation's slot).
func (d *daemon) detect(ctx context.Context, name, trigger string) {
	d.detectRun(ctx, schedule.QueuedRun{Name: name, Trigger: trigger})
}

// detectRun is one detection run of one workspace: r is the queued run (no
// ID: not queued).
func (d *daemon) detectRun(ctx context.Context, r schedule.QueuedRun) {
	d.mu.Lock()
	busy := d.adopted[r.Name]
	d.mu.Unlock()
	if busy {
		d.log.Info("run skipped: an adopted Job of the workspace is still running", "workspace", r.Name, "trigger", r.Trigger, "run_id", r.ID)
		d.skipQueued(ctx, r)
		return
	}
	d.detectWith(ctx, r, d.auditor, nil)
}

// awaitAdopted records the outcome of a Job a previous daemon started. A
// detection Job's run was left running by lead (MarkInterrupted kept it),
// so its outcome finishes that run, under its own id. A remediation Job's
// outcome is recorded on its remediation and the verification detection
// that follows is a new run with trigger "adopted", as is a detection Job's
// outcome when the store has no running run with its id.
func (d *daemon) awaitAdopted(ctx context.Context, a *kube.Adopted) {
	d.log.Info("awaiting adopted job", "workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job)
	r := schedule.QueuedRun{Name: a.Workspace, Trigger: "adopted"}
	var resume *store.Run
	if !a.Remediation {
		run, err := d.store.Run(ctx, a.RunID)
		switch {
		case err != nil:
			d.log.Warn("adopted job: its run is not in the store; recording its outcome as a new run",
				"workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job, "err", err)
		case run.Status != store.RunRunning || run.Workspace != a.Workspace:
			d.log.Warn("adopted job: its run is not running; recording its outcome as a new run",
				"workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job, "status", run.Status, "run_workspace", run.Workspace)
		default:
			resume = &run
			r = schedule.QueuedRun{ID: run.ID, Name: a.Workspace, Trigger: run.Trigger}
		}
	}
	d.detectWith(ctx, r, &audit.Auditor{Runner: adoptedRunner{a: a, d: d}, Logger: d.log}, resume)
	d.mu.Lock()
	delete(d.adopted, a.Workspace)
	d.mu.Unlock()
}

// trigger is the API's manual trigger: it returns the queued run's id, or
// ErrBusy (409) with the id of the run already queued or running (none
// while an adopted Job or a remediation apply of the workspace runs).
func (d *daemon) trigger(name string) (string, error) {
	if !d.leading.Load() {
		return "", d.notLeading()
	}
	d.mu.Lock()
	busy := d.adopted[name]
	d.mu.Unlock()
	if busy {
		return "", fmt.Errorf("%w (adopted kubernetes job still running)", schedule.ErrBusy)
	}
	r, err := d.sched.Queue(name, schedule.TriggerManual)
	if r.Trigger == triggerRemediate {
		// Busy with an apply: its run is recorded under its own id.
		return "", err
	}
	return r.ID, err
}

// detectWith runs and records one detection run: the queued run r (its
// record and live log exist), or a new run when r has no ID. With resume
// (r.ID is its ID), the run is an adopted Job's that a previous daemon
// recorded as running: it is not started again but finished.
func (d *daemon) detectWith(ctx context.Context, r schedule.QueuedRun, auditor *audit.Auditor, resume *store.Run) {
	if d.stopping.Load() {
		// Shutting down or lost the Lease: start nothing. A queued run's
		// record is marked interrupted (and re-run) at the next start.
		return
	}
	name, trigger := r.Name, r.Trigger
	t, ok := (*d.targets.Load())[name]
	if !ok && resume == nil {
		d.dropQueued(ctx, r, "the workspace was removed from the config while the run was queued")
		return
	}
	if !ok {
		// An adopted Job of a workspace no longer in the config: its run
		// ends interrupted, as it would have at start.
		run := *resume
		run.FinishedAt, run.Status = time.Now().UTC(), store.RunInterrupted
		run.Error = "the workspace was removed from the config while its adopted Job ran"
		if err := d.store.FinishRunOnly(context.WithoutCancel(ctx), run); err != nil {
			d.log.Warn("store: finish adopted run", "workspace", name, "run_id", run.ID, "err", err)
		}
		return
	}
	if errors.Is(context.Cause(ctx), runlog.ErrCancelled) && resume == nil {
		// Cancelled just as the scheduler dispatched it: start nothing.
		d.dropQueued(ctx, r, "cancelled by request")
		return
	}
	t.Request.RunID = r.ID
	if r.ID == "" {
		t.Request.RunID = newRunID()
	}
	log := d.log.With("workspace", name, "run_id", t.Request.RunID)
	// The run's own log (redacted by the runner; head and tail kept),
	// created when it was queued, and a cancel function for POST
	// /api/v1/runs/{id}/cancel.
	runLog := d.runs.Live(t.Request.RunID)
	if runLog == nil {
		runLog = d.newRunLog(name)
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
		if err := d.store.StartQueuedRun(context.WithoutCancel(ctx), run); err != nil {
			log.Error("store: start run", "err", err)
			runLog.Close(string(drift.StatusErrored))
			d.runs.Remove(run.ID)
			return
		}
		log.Info("run started", "trigger", trigger)
		if r.ID != "" {
			runLog.Printf("== started after %s in the queue ==", run.StartedAt.Sub(r.QueuedAt).Round(time.Millisecond))
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	d.runs.Add(run.ID, runLog, cancel)
	defer d.runs.Remove(run.ID)
	t.Request.Log = runLog
	defer func() {
		// A bug must not leave the run "running" and its log followers
		// waiting forever: record it errored, then let the scheduler's
		// recovery log the panic.
		if p := recover(); p != nil {
			run.FinishedAt = time.Now().UTC()
			run.Status, run.Error = drift.StatusErrored, "internal error: the run panicked (see the daemon log)"
			_ = d.store.FinishRunOnly(context.WithoutCancel(ctx), run)
			d.saveRunLog(ctx, log, run.ID, runLog, drift.StatusErrored)
			panic(p)
		}
	}()
	res, tfPlan := auditor.CheckPlan(runCtx, t)
	if errors.Is(context.Cause(runCtx), runlog.ErrCancelled) {
		// Cancelled: neither clean nor errored; state and incidents stay.
		run.FinishedAt = time.Now().UTC()
		run.Status, run.Error, run.Tool, run.Phases = store.RunCancelled, "cancelled by request", res.Tool, res.Phases
		if err := d.store.FinishRunOnly(context.WithoutCancel(ctx), run); err != nil {
			log.Error("store: finish cancelled run", "err", err)
		}
		d.saveRunLog(ctx, log, run.ID, runLog, store.RunCancelled)
		log.Info("run cancelled")
		return
	}
	if ctx.Err() != nil || d.stopping.Load() {
		// Kubernetes mode: the Job keeps running and the next daemon
		// adopts it.
		log.Info("run interrupted by shutdown; it will be re-run at the next start")
		return
	}
	run.FinishedAt = res.Started.Add(res.Duration).UTC()
	run.Status, run.Error, run.Tool, run.Findings, run.Phases = res.Status, res.Error, res.Tool, res.Findings, res.Phases
	// Record even if the daemon is stopping: the result is already paid
	// for. Incident changes and their notifications are written in the same
	// transaction, so a crash can lose neither.
	plan := (*d.alerts.Load())[name]
	_, after, err := d.store.FinishRunWithOutcome(context.WithoutCancel(ctx), run, plan.outcome(time.Now().UTC(), run.ID))
	if err != nil {
		log.Error("store: finish run", "err", err)
		return
	}
	d.outbox.Wake()
	d.saveRunLog(ctx, log, run.ID, runLog, run.Status)
	d.mu.Lock()
	d.states[name] = after
	d.mu.Unlock()
	d.rem.AfterDetect(ctx, t, run.ID, res, tfPlan)
	total := drift.Phase{Name: "total", Duration: res.Duration}
	d.metrics.RunFinished(res.Status, append(res.Phases, total))
	if d.onResult != nil {
		d.onResult(res)
	}
}

// saveRunLog stores a finished run's log and ends its live followers with
// the verdict: stored first, so a reader finds it in one place or the other.
func (d *daemon) saveRunLog(ctx context.Context, log *slog.Logger, runID string, l *runlog.Log, verdict drift.Status) {
	if err := d.store.SaveRunLog(context.WithoutCancel(ctx), runID, l.Bytes()); err != nil {
		log.Warn("store: save run log", "err", err)
	}
	l.Close(string(verdict))
}
