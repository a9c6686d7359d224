package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Run expires pending remediations and queues approved ones into their
// workspace's scheduler slot (retrying while the workspace is busy),
// unless the kill switch is on. It blocks until ctx is done, then returns
// nil. The daemon runs it while it leads.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		now := time.Now().UTC()
		if exp, err := c.store.ExpireRemediations(ctx, now); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("expire remediations", "err", err)
			}
		} else {
			for _, r := range exp {
				c.log.Info("remediation expired unapproved", "workspace", r.Workspace, "remediation", r.ID)
				c.metrics.Finished(string(store.RemediationExpired))
			}
		}
		// Every tick, kill switch or not: the remediations of workspaces
		// whose remediation is off end (Reloaded does it at once on a
		// reload; this covers a config changed while the daemon was down,
		// and a remediation the kill switch handed back as approved).
		if rs, err := c.store.Remediations(ctx, "", 200); err == nil {
			rs = c.sweepOff(ctx, rs, now)
			if !c.stopped() {
				c.queueApproved(ctx, now, rs)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.kick:
		}
	}
}

// queueApproved queues the approved remediations among rs (the newest,
// newest first) into their workspaces' slots.
func (c *Controller) queueApproved(ctx context.Context, now time.Time, rs []store.Remediation) {
	queued := map[string]bool{}
	for _, r := range rs {
		if r.State != store.RemediationApproved || queued[r.Workspace] {
			continue
		}
		queued[r.Workspace] = true
		err := c.host.QueueApply(r.Workspace)
		switch {
		case err == nil, errors.Is(err, schedule.ErrBusy):
		case errors.Is(err, schedule.ErrUnknownJob):
			_, _ = c.store.TransitionRemediation(ctx, r.ID, []store.RemediationState{store.RemediationApproved},
				store.Transition{State: store.RemediationRefused, At: now, Reason: "the workspace is no longer configured"})
			c.metrics.Finished(string(store.RemediationRefused))
		default:
			c.log.Warn("remediation not queued", "workspace", r.Workspace, "err", err)
		}
	}
}

// Apply runs in the workspace's scheduler slot (the daemon's scheduler
// job for a TriggerRemediate run): it applies the oldest approved
// remediation of the workspace, records the outcome (on the remediation
// and as a run with trigger "remediate"), then runs a fresh detection
// (Host.Detect) so the workspace's state and incidents follow. runID is
// the apply run's id: the scheduler's, so that cancelling that run
// (the API's cancel) stops the apply ("" mints one). runLog, if not nil,
// is the apply run's log (terraform.Request.Log): the apply writes its
// init, plans and progress into it, without values, and Apply its start
// and outcome. It returns the apply run's status, "" when it recorded no
// apply run (nothing approved, remediation off, or a Job left applying
// at shutdown).
func (c *Controller) Apply(ctx context.Context, name, runID string, runLog io.Writer) drift.Status {
	if c.stopped() {
		return "" // stays approved; queued again on resume
	}
	rs, err := c.store.Remediations(ctx, name, 50)
	if err != nil {
		c.log.Error("remediation: list", "workspace", name, "err", err)
		return ""
	}
	var r store.Remediation
	for _, x := range rs {
		if x.State == store.RemediationApproved {
			r = x // oldest approved: the list is newest first
		}
	}
	if r.ID == "" {
		return ""
	}
	now := time.Now().UTC()
	wctx := context.WithoutCancel(ctx)
	// Started under decide, with the mode read from the current config: a
	// workspace whose remediation was turned off (or removed) ends its
	// approved remediation instead; a reload after this finds it running
	// and leaves it to the check right before the apply (Proceed below).
	c.decide.Lock()
	if why := c.offReason(name, false); why != "" {
		c.endOff(wctx, r, now, why)
		c.decide.Unlock()
		return ""
	}
	t, ok := c.host.Target(name)
	pol, pok := c.policy(name)
	if !ok || !pok {
		c.decide.Unlock()
		return ""
	}
	t.Request.RunID = runID
	if runID == "" {
		t.Request.RunID = drift.NewRunID()
	}
	t.Request.Log = runLog
	log := c.log.With("workspace", name, "remediation", r.ID, "run_id", t.Request.RunID)
	_, err = c.store.TransitionRemediation(wctx, r.ID, []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: now, ApplyRunID: t.Request.RunID})
	c.decide.Unlock()
	if err != nil {
		log.Warn("remediation: not started", "err", err)
		return ""
	}
	run := store.Run{ID: t.Request.RunID, Workspace: name, Trigger: TriggerRemediate, StartedAt: now, Status: store.RunRunning}
	if err := c.store.StartRun(wctx, run); err != nil {
		log.Error("store: start run", "err", err)
	}
	var approved engine.ChangeSet
	out := engine.Outcome{}
	if err := json.Unmarshal(r.ChangeSet, &approved); err != nil {
		out = engine.Outcome{Result: engine.ResultRefused, Reason: "stored change set unreadable: " + err.Error()}
	} else {
		// Proceed is asked right before `terraform apply` in this process:
		// a reload may have turned the workspace's remediation off while it
		// planned. A Job's pod asks the daemon instead (MayApply).
		a := &engine.Applier{Logger: c.log, Rules: t.Rules, Envelope: pol.Envelope, LockTimeout: pol.LockTimeout, Paused: c.stopped,
			Proceed: func(context.Context) *engine.Refusal { return c.offRefusal(name) }}
		log.Info("remediation apply started", "resources", approved.Len(), "change_set_hash", r.ChangeSetHash, "runner", c.runner)
		logf(runLog, "== remediation %s: change set %s, %d to apply ==", r.ID, r.ChangeSetHash, approved.Len())
		var err error
		out, err = c.applier.Remediate(ctx, a, t.Request, approved)
		if errors.Is(err, ErrLeftRunning) {
			// Shutdown: the Job keeps applying. The next start marks
			// this remediation interrupted, then awaits the Job and
			// records its outcome (RecordAdopted).
			log.Info("remediation interrupted by shutdown; its Job is left running for the next daemon to await")
			return ""
		}
	}
	if ctx.Err() != nil && out.Result == engine.ResultFailed && out.ApplyStarted {
		// Terraform was interrupted mid-apply: by a cancel of the apply's
		// run, or because the daemon is stopping.
		why := "interrupted by the daemon's shutdown during the apply"
		if errors.Is(context.Cause(ctx), runlog.ErrCancelled) {
			why = "cancelled by request during the apply"
		}
		out.Reason = why + ": part of the change set may be applied; not retried, the next detection shows what is left (" + out.Reason + ")"
	}
	fin := time.Now().UTC()
	logf(runLog, "== %s ==", outcomeLine(out))
	c.finishApplyRun(wctx, log, run, out, fin)
	status := drift.Status(out.Result)
	if c.recordOutcome(wctx, log, r, store.RemediationRunning, out, fin) {
		return status // held by the kill switch: approved again
	}
	c.metrics.Finished(string(out.Result))
	if errors.Is(context.Cause(ctx), runlog.ErrCancelled) {
		return status // cancelled by request: the next detection shows what is left
	}
	// A fresh detection in the same slot: it resolves the incident after
	// a successful revert, and keeps it open after a failed one. When the
	// daemon is stopping, it is queued for the next start instead.
	c.host.Detect(ctx, name, triggerVerify)
	return status
}

// outcomeLine is an apply's outcome as its log's last line: the result
// and its one-line, secret-free reason.
func outcomeLine(out engine.Outcome) string {
	if out.Reason == "" {
		return string(out.Result)
	}
	return string(out.Result) + ": " + out.Reason
}

// logf writes one line to an apply run's log, if it has one.
func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format+"\n", args...)
	}
}

// RecordAdopted records the outcome of a remediation Job that a previous
// daemon left applying, once awaited (the kubernetes runner's
// Adopted.AwaitRemediation), on the remediation it applies (which New
// marked failed at start: "driftwatch stopped during the apply"); the
// apply's run, left running at the restart, finishes under its id with
// the outcome.
func (c *Controller) RecordAdopted(ctx context.Context, workspace, runID string, out engine.Outcome) {
	log := c.log.With("workspace", workspace, "run_id", runID)
	fin := time.Now().UTC()
	if run, err := c.store.Run(ctx, runID); err == nil && run.Status == store.RunRunning && run.Workspace == workspace {
		c.finishApplyRun(ctx, log, run, out, fin)
	}
	r, err := c.store.RemediationByApplyRun(ctx, runID)
	if err != nil {
		log.Warn("adopted remediation job finished; no remediation to record it on",
			"result", out.Result, "reason", out.Reason, "err", err)
		return
	}
	if !c.recordOutcome(ctx, log, r, store.RemediationFailed, out, fin) {
		log.Info("adopted remediation job finished", "remediation", r.ID, "result", out.Result, "reason", out.Reason)
	}
}

// finishApplyRun records an apply's run finished at fin with the result
// of its outcome (applied, failed, refused...).
func (c *Controller) finishApplyRun(ctx context.Context, log *slog.Logger, run store.Run, out engine.Outcome, fin time.Time) {
	run.FinishedAt, run.Status, run.Error, run.Tool, run.Phases = fin, drift.Status(out.Result), out.Reason, out.Tool, out.Phases
	run.Findings = out.Residual
	if err := c.store.FinishRunOnly(ctx, run); err != nil {
		log.Error("store: finish remediation run", "err", err)
	}
}

// recordOutcome ends remediation r, in state from, with the outcome of
// its apply: approved again when the kill switch held it before the apply
// (held), else out's result, announced on the incident.
func (c *Controller) recordOutcome(ctx context.Context, log *slog.Logger, r store.Remediation, from store.RemediationState, out engine.Outcome, at time.Time) (held bool) {
	if heldByKillSwitch(out) {
		c.reapprove(ctx, log, r, from, out.Reason)
		return true
	}
	outJSON, _ := json.Marshal(out)
	if _, err := c.transitionAnnounced(ctx, r, []store.RemediationState{from},
		store.Transition{State: store.RemediationState(out.Result), At: at, Reason: out.Reason, Outcome: outJSON}); err != nil {
		log.Error("store: record remediation outcome", "remediation", r.ID, "err", err)
	}
	return false
}

// heldByKillSwitch reports whether an apply was refused by the kill
// switch (in the daemon, or asked by a Job's pod right before the apply):
// nothing was applied.
func heldByKillSwitch(out engine.Outcome) bool {
	return out.Result == engine.ResultRefused &&
		slices.ContainsFunc(out.Refusals, func(x engine.Refusal) bool { return x.Code == engine.CodePaused })
}

// refusedTransiently reports whether remediation r's apply was refused
// only for a passing reason (another operation held the state lock, the
// Job's pod could not reach a restarting daemon, or the workspace's
// remediation was turned off: endOff, MayApply): nothing was applied,
// and the next detection of the same drift may propose it again. Not
// re-queued at once: a lasting cause (a NetworkPolicy, a stuck lock) then
// costs one attempt per detection, not a loop of Jobs.
func refusedTransiently(r store.Remediation) bool {
	var out engine.Outcome
	if r.State != store.RemediationRefused || len(r.Outcome) == 0 || json.Unmarshal(r.Outcome, &out) != nil || len(out.Refusals) == 0 {
		return false
	}
	return !slices.ContainsFunc(out.Refusals, func(x engine.Refusal) bool {
		return x.Code != engine.CodeStateLocked && x.Code != engine.CodeDaemonUnreachable && x.Code != engine.CodeRemediationOff
	})
}

// reapprove returns remediation r, held by the kill switch before its
// apply, from state from to approved (who approved it and when kept): it
// is queued again on resume. Its apply run stays recorded as refused.
func (c *Controller) reapprove(ctx context.Context, log *slog.Logger, r store.Remediation, from store.RemediationState, reason string) {
	at := r.DecidedAt
	if at.IsZero() {
		at = time.Now().UTC()
	}
	if _, err := c.store.TransitionRemediation(ctx, r.ID, []store.RemediationState{from},
		store.Transition{State: store.RemediationApproved, At: at, By: r.DecidedBy, Reason: reason}); err != nil {
		log.Error("store: re-approve remediation held by the kill switch", "remediation", r.ID, "err", err)
		return
	}
	log.Warn("remediation held by the kill switch before its apply: nothing applied; approved again, applies on resume", "remediation", r.ID)
}
