package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/planparse"
	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// triggerRemediate is the scheduler trigger (and run trigger) of an apply:
// going through the scheduler gives it the workspace's slot, so no other
// run of the workspace is in flight while it applies.
const triggerRemediate = "remediate"

// triggerVerify is the detection run queued right after an apply.
const triggerVerify = "verify"

// remediator wires internal/remediate into the daemon: it records what
// detection runs propose, owns approval, expiry and the kill switch, and
// applies approved change sets in the workspace's scheduler slot.
type remediator struct {
	d       *daemon
	log     *slog.Logger
	paused  atomic.Bool // persisted pause flag (POST /api/v1/remediation/pause)
	metrics *metrics.Remediations
	kick    chan struct{}
	// decide serialises a decision that reads the workspace's remediation
	// mode and then moves a remediation on (approve, propose, start an
	// apply) with a config reload ending the remediations of workspaces
	// turned off (reloaded): the decision sees the new config, or the
	// reload sees what the decision wrote.
	decide sync.Mutex
	// applyWith, if set, replaces d.remediationApplier() (test seam).
	applyWith remediationApplier
}

func newRemediator(ctx context.Context, d *daemon, m *metrics.Remediations) (*remediator, error) {
	rm := &remediator{d: d, log: d.log.With("component", "remediation"), metrics: m, kick: make(chan struct{}, 1)}
	p, err := d.store.RemediationPaused(ctx)
	if err != nil {
		return nil, err
	}
	rm.paused.Store(p)
	interrupted, err := d.store.InterruptRemediations(ctx, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	for _, r := range interrupted {
		rm.log.Warn("remediation interrupted by a restart: marked failed", "workspace", r.Workspace, "remediation", r.ID)
		rm.metrics.Finished(string(store.RemediationFailed))
	}
	return rm, nil
}

// stopped reports whether the kill switch is on (config or API).
func (rm *remediator) stopped() bool {
	return !rm.d.cfg.Load().Remediation.On() || rm.paused.Load()
}

func (rm *remediator) wake() {
	select {
	case rm.kick <- struct{}{}:
	default:
	}
}

func (rm *remediator) workspace(name string) (config.Workspace, bool) {
	cfg := rm.d.cfg.Load()
	for _, w := range cfg.Workspaces {
		if w.Name == name {
			return w, true
		}
	}
	return config.Workspace{}, false
}

func (rm *remediator) policy(name string) (config.RemediationPolicy, bool) {
	w, ok := rm.workspace(name)
	if !ok {
		return config.RemediationPolicy{}, false
	}
	return rm.d.cfg.Load().EffectiveRemediation(w), true
}

// offReason says why workspace name may not be remediated under the
// current (reloaded) config, or "" when it may: its effective
// remediation.mode is off, or it is no longer configured. byReload words
// it for a reload that just turned it off. The kill switch is apart
// (stopped): it holds approved remediations until resume, where this ends
// them.
func (rm *remediator) offReason(name string, byReload bool) string {
	pol, ok := rm.policy(name)
	switch {
	case !ok && byReload:
		return fmt.Sprintf("workspace %s removed by config reload", name)
	case !ok:
		return fmt.Sprintf("workspace %s is no longer configured", name)
	case pol.Mode != config.RemediationOff:
		return ""
	case byReload:
		return "remediation turned off by config reload"
	}
	return fmt.Sprintf("remediation for workspace %s is off (config)", name)
}

// offRefusal is the apply-time refusal of a remediation of workspace name
// whose remediation is off (offReason), or nil.
func (rm *remediator) offRefusal(name string) *remediate.Refusal {
	why := rm.offReason(name, false)
	if why == "" {
		return nil
	}
	return &remediate.Refusal{Code: remediate.CodeRemediationOff, Reason: why + ": nothing applied"}
}

// reloaded runs after a config reload replaced old: the pending and
// approved remediations of every workspace whose remediation it turned off
// (or which it removed) end, with the reason (endOff). A remediation
// already applying is not interrupted: stopping `terraform apply` half way
// is worse than letting it finish. If its apply has not started yet, the
// check right before it (Applier.Proceed locally, mayApply for a Job's
// pod) refuses it; either way its outcome is recorded as usual. Other
// changes (approve to auto, a new envelope) end nothing: an apply re-plans
// under the current rules and compares hashes anyway. A standby writes
// nothing: the leader's loop ends what a reload it missed turned off.
func (rm *remediator) reloaded(ctx context.Context, old *config.Config) {
	if !rm.d.leading.Load() {
		return
	}
	for _, w := range old.Workspaces {
		if old.EffectiveRemediation(w).Mode == config.RemediationOff || rm.offReason(w.Name, false) == "" {
			continue
		}
		rs, err := rm.d.store.Remediations(ctx, w.Name, 0)
		if err != nil {
			rm.log.Error("config reload: list remediations of a workspace turned off", "workspace", w.Name, "err", err)
			continue
		}
		rm.endOffAll(ctx, rs, time.Now().UTC(), true)
	}
}

// endOffAll ends (endOff) the pending and approved remediations among rs
// whose workspace's remediation is off, checked under rm.decide, and
// returns the others.
func (rm *remediator) endOffAll(ctx context.Context, rs []store.Remediation, now time.Time, byReload bool) []store.Remediation {
	kept := rs[:0:0]
	for _, r := range rs {
		if r.State == store.RemediationPending || r.State == store.RemediationApproved {
			rm.decide.Lock()
			why := rm.offReason(r.Workspace, byReload)
			if why != "" {
				rm.endOff(ctx, r, now, why)
			}
			rm.decide.Unlock()
			if why != "" {
				continue
			}
		}
		kept = append(kept, r)
	}
	return kept
}

// endOff ends remediation r, pending or approved, of a workspace whose
// remediation is off, with reason: a pending one expires (the approval it
// waits for can no longer be given); an approved one is refused before
// its apply, with an outcome (remediation_off, nothing applied) that lets
// a later detection propose the same change set again once remediation
// is back on (refusedTransiently). Both go through
// TransitionRemediationWithAlert like every transition: the refusal is
// announced on the open drift incident, the expiry (as every expiry) is
// not. The caller holds rm.decide.
func (rm *remediator) endOff(ctx context.Context, r store.Remediation, now time.Time, reason string) {
	to := store.Transition{State: store.RemediationExpired, At: now, By: "config", Reason: reason}
	switch r.State {
	case store.RemediationPending:
	case store.RemediationApproved:
		out, _ := json.Marshal(remediate.Outcome{Result: remediate.ResultRefused, Reason: reason,
			Refusals: []remediate.Refusal{{Code: remediate.CodeRemediationOff, Reason: reason}}})
		to = store.Transition{State: store.RemediationRefused, At: now, Reason: reason, Outcome: out}
	default:
		return
	}
	log := rm.log.With("workspace", r.Workspace, "remediation", r.ID)
	if _, err := rm.transitionAnnounced(context.WithoutCancel(ctx), r.ID, []store.RemediationState{r.State}, to); err != nil {
		if !errors.Is(err, store.ErrConflict) { // else it moved on meanwhile
			log.Error("store: end remediation of a workspace whose remediation is off", "err", err)
		}
		return
	}
	log.Warn("remediation ended: remediation is off for its workspace; nothing applied", "state", to.State, "reason", reason)
	rm.metrics.Finished(string(to.State))
}

func refusalCodes(raw json.RawMessage) string {
	var rs []remediate.Refusal
	_ = json.Unmarshal(raw, &rs)
	codes := make([]string, 0, len(rs))
	for _, r := range rs {
		codes = append(codes, r.Code+"@"+r.Address)
	}
	slices.Sort(codes)
	return strings.Join(codes, ",")
}

func summarizeRefusals(rs []remediate.Refusal) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

// afterDetect evaluates the envelope on a finished detection run and
// records a remediation for a drifted workspace whose mode is not off.
func (rm *remediator) afterDetect(ctx context.Context, t audit.Target, runID string, res drift.Result, plan *planparse.Plan) {
	pol, ok := rm.policy(t.Name)
	if !ok || pol.Mode == config.RemediationOff || res.Status == drift.StatusErrored || drift.CountFindings(res.Findings).Drift == 0 {
		return
	}
	log := rm.log.With("workspace", t.Name, "run_id", runID)
	var findings []drift.Finding
	for _, f := range res.Findings {
		if f.Kind != drift.KindBackend {
			findings = append(findings, f)
		}
	}
	cs, refusals := remediate.Evaluate(pol.Envelope, findings, plan)
	csJSON, err := json.Marshal(cs)
	if err != nil {
		log.Error("remediation: encode change set", "err", err)
		return
	}
	if refusals == nil {
		refusals = []remediate.Refusal{}
	}
	refJSON, _ := json.Marshal(refusals)
	now := time.Now().UTC()
	r := store.Remediation{
		ID: newRunID(), Workspace: t.Name, DetectRunID: runID, Mode: pol.Mode,
		ChangeSet: csJSON, ChangeSetHash: cs.Hash(), Refusals: refJSON, CreatedAt: now,
	}
	switch {
	case len(refusals) > 0:
		r.State, r.Reason = store.RemediationRefused, summarizeRefusals(refusals)
	case pol.Mode == config.RemediationAuto:
		r.State, r.DecidedAt, r.DecidedBy = store.RemediationApproved, now, "auto"
	default:
		r.State, r.ExpiresAt = store.RemediationPending, now.Add(pol.ApprovalTTL)
	}

	// One remediation per change set: a detection every few minutes must
	// not pile up proposals, re-propose a rejected one, or retry a failed
	// apply (a person looks at it first).
	ctx = context.WithoutCancel(ctx)
	// Under decide, with the mode read again: a reload turning the
	// workspace's remediation off while this run planned ends what is
	// stored here, or is seen here.
	rm.decide.Lock()
	defer rm.decide.Unlock()
	if rm.offReason(t.Name, false) != "" {
		return
	}
	prev, err := rm.d.store.Remediations(ctx, t.Name, 1)
	if err != nil {
		log.Error("remediation: read previous", "err", err)
		return
	}
	if len(prev) == 1 {
		p := prev[0]
		same := p.ChangeSetHash == r.ChangeSetHash
		switch p.State {
		case store.RemediationPending:
			if same && r.State != store.RemediationRefused {
				return
			}
			// The drift changed (or is now refused): the pending proposal
			// no longer describes it.
			if _, err := rm.d.store.TransitionRemediation(ctx, p.ID, []store.RemediationState{store.RemediationPending},
				store.Transition{State: store.RemediationExpired, At: now, By: "superseded", Reason: "superseded by remediation " + r.ID}); err == nil {
				rm.metrics.Finished(string(store.RemediationExpired))
			}
		case store.RemediationApproved, store.RemediationRunning:
			return // its apply re-plans and compares hashes itself
		case store.RemediationRejected, store.RemediationFailed, store.RemediationVerificationFailed:
			if same {
				return
			}
		case store.RemediationRefused:
			if same && refusalCodes(p.Refusals) == refusalCodes(refJSON) && !refusedTransiently(p) {
				return
			}
		}
	}
	if err := rm.createAnnounced(ctx, r); err != nil {
		log.Error("remediation: store", "err", err)
		return
	}
	log.Info("remediation proposed", "remediation", r.ID, "state", r.State, "mode", r.Mode, "resources", cs.Len(), "reason", r.Reason)
	if r.State == store.RemediationRefused {
		rm.metrics.Finished(string(store.RemediationRefused))
	}
	if r.State == store.RemediationApproved {
		rm.wake()
	}
}

// loop expires pending remediations and queues approved ones into their
// workspace's scheduler slot (retrying while the workspace is busy),
// unless the kill switch is on.
func (rm *remediator) loop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		now := time.Now().UTC()
		if exp, err := rm.d.store.ExpireRemediations(ctx, now); err != nil {
			if ctx.Err() == nil {
				rm.log.Warn("expire remediations", "err", err)
			}
		} else {
			for _, r := range exp {
				rm.log.Info("remediation expired unapproved", "workspace", r.Workspace, "remediation", r.ID)
				rm.metrics.Finished(string(store.RemediationExpired))
			}
		}
		// Every tick, kill switch or not: the remediations of workspaces
		// whose remediation is off end (reloaded does it at once on a
		// reload; this covers a config changed while the daemon was down,
		// and a remediation the kill switch handed back as approved).
		if rs, err := rm.d.store.Remediations(ctx, "", 200); err == nil {
			rs = rm.endOffAll(ctx, rs, now, false)
			if !rm.stopped() {
				rm.queueApproved(ctx, now, rs)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-rm.kick:
		}
	}
}

// queueApproved queues the approved remediations among rs (the newest,
// newest first) into their workspaces' slots.
func (rm *remediator) queueApproved(ctx context.Context, now time.Time, rs []store.Remediation) {
	queued := map[string]bool{}
	for _, r := range rs {
		if r.State != store.RemediationApproved || queued[r.Workspace] {
			continue
		}
		queued[r.Workspace] = true
		err := rm.d.sched.Trigger(r.Workspace, triggerRemediate)
		switch {
		case err == nil, errors.Is(err, schedule.ErrBusy):
		case errors.Is(err, schedule.ErrUnknownJob):
			_, _ = rm.d.store.TransitionRemediation(ctx, r.ID, []store.RemediationState{store.RemediationApproved},
				store.Transition{State: store.RemediationRefused, At: now, Reason: "the workspace is no longer configured"})
			rm.metrics.Finished(string(store.RemediationRefused))
		default:
			rm.log.Warn("remediation not queued", "workspace", r.Workspace, "err", err)
		}
	}
}

// apply runs in the workspace's scheduler slot: it applies the oldest
// approved remediation of the workspace, records the outcome (on the
// remediation and as a run with trigger "remediate"), then runs a fresh
// detection so the workspace's state and incidents follow.
func (rm *remediator) apply(ctx context.Context, name string) {
	if rm.stopped() {
		return // stays approved; queued again on resume
	}
	rs, err := rm.d.store.Remediations(ctx, name, 50)
	if err != nil {
		rm.log.Error("remediation: list", "workspace", name, "err", err)
		return
	}
	var r store.Remediation
	for _, x := range rs {
		if x.State == store.RemediationApproved {
			r = x // oldest approved: the list is newest first
		}
	}
	if r.ID == "" {
		return
	}
	now := time.Now().UTC()
	wctx := context.WithoutCancel(ctx)
	// Started under decide, with the mode read from the current config: a
	// workspace whose remediation was turned off (or removed) ends its
	// approved remediation instead; a reload after this finds it running
	// and leaves it to the check right before the apply (Proceed below).
	rm.decide.Lock()
	if why := rm.offReason(name, false); why != "" {
		rm.endOff(wctx, r, now, why)
		rm.decide.Unlock()
		return
	}
	t, ok := (*rm.d.targets.Load())[name]
	pol, pok := rm.policy(name)
	if !ok || !pok {
		rm.decide.Unlock()
		return
	}
	t.Request.RunID = newRunID()
	log := rm.log.With("workspace", name, "remediation", r.ID, "run_id", t.Request.RunID)
	_, err = rm.d.store.TransitionRemediation(wctx, r.ID, []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: now, ApplyRunID: t.Request.RunID})
	rm.decide.Unlock()
	if err != nil {
		log.Warn("remediation: not started", "err", err)
		return
	}
	run := store.Run{ID: t.Request.RunID, Workspace: name, Trigger: triggerRemediate, StartedAt: now, Status: store.RunRunning}
	if err := rm.d.store.StartRun(wctx, run); err != nil {
		log.Error("store: start run", "err", err)
	}
	var approved remediate.ChangeSet
	out := remediate.Outcome{}
	if err := json.Unmarshal(r.ChangeSet, &approved); err != nil {
		out = remediate.Outcome{Result: remediate.ResultRefused, Reason: "stored change set unreadable: " + err.Error()}
	} else {
		// Proceed is asked right before `terraform apply` in this process:
		// a reload may have turned the workspace's remediation off while it
		// planned. A Job's pod asks the daemon instead (mayApply).
		a := &remediate.Applier{Logger: rm.log, Rules: t.Rules, Envelope: pol.Envelope, LockTimeout: pol.LockTimeout, Paused: rm.stopped,
			Proceed: func(context.Context) *remediate.Refusal { return rm.offRefusal(name) }}
		log.Info("remediation apply started", "resources", approved.Len(), "change_set_hash", r.ChangeSetHash, "runner", rm.d.runnerMode())
		applier := rm.applyWith
		if applier == nil {
			applier = rm.d.remediationApplier()
		}
		var err error
		out, err = applier.Remediate(ctx, a, t.Request, approved)
		if errors.Is(err, kube.ErrStopped) {
			// Shutdown: the Job keeps applying. The next start marks
			// this remediation interrupted, then awaits the Job and
			// records its outcome (remediator.awaitAdopted).
			log.Info("remediation interrupted by shutdown; its Job is left running for the next daemon to await")
			return
		}
	}
	fin := time.Now().UTC()
	run.FinishedAt, run.Status, run.Error, run.Tool, run.Phases = fin, drift.Status(out.Result), out.Reason, out.Tool, out.Phases
	run.Findings = out.Residual
	if err := rm.d.store.FinishRunOnly(wctx, run); err != nil {
		log.Error("store: finish remediation run", "err", err)
	}
	if rm.recordOutcome(wctx, log, r, store.RemediationRunning, out, fin) {
		return // held by the kill switch: approved again
	}
	rm.metrics.Finished(string(out.Result))
	if ctx.Err() != nil {
		return
	}
	// A fresh detection in the same slot: it resolves the incident after
	// a successful revert, and keeps it open after a failed one.
	rm.d.detect(ctx, name, triggerVerify)
}

// recordOutcome ends remediation r, in state from, with the outcome of
// its apply: approved again when the kill switch held it before the apply
// (held), else out's result, announced on the incident.
func (rm *remediator) recordOutcome(ctx context.Context, log *slog.Logger, r store.Remediation, from store.RemediationState, out remediate.Outcome, at time.Time) (held bool) {
	if heldByKillSwitch(out) {
		rm.reapprove(ctx, log, r, from, out.Reason)
		return true
	}
	outJSON, _ := json.Marshal(out)
	if _, err := rm.transitionAnnounced(ctx, r.ID, []store.RemediationState{from},
		store.Transition{State: store.RemediationState(out.Result), At: at, Reason: out.Reason, Outcome: outJSON}); err != nil {
		log.Error("store: record remediation outcome", "remediation", r.ID, "err", err)
	}
	return false
}

// control implements server.RemediationControl.
type remediationControl struct{ rm *remediator }

var _ server.RemediationControl = remediationControl{}

func (c remediationControl) List(ctx context.Context, workspace string) ([]store.Remediation, error) {
	return c.rm.d.store.Remediations(ctx, workspace, 200)
}

func (c remediationControl) Get(ctx context.Context, id string) (store.Remediation, error) {
	return c.rm.d.store.Remediation(ctx, id)
}

// Approve approves a pending remediation of a workspace whose remediation
// is not off in the current config (a 409 otherwise, naming why; a
// pending one is then recorded expired with that reason). The kill switch
// does not refuse an approval: the approved remediation waits for resume.
func (c remediationControl) Approve(ctx context.Context, id, hash string) (store.Remediation, error) {
	st := c.rm.d.store
	r, err := st.Remediation(ctx, id)
	if err != nil {
		return r, err
	}
	// Under decide: a reload that turns the workspace's remediation off
	// is seen here, or ends what this approves (reloaded).
	c.rm.decide.Lock()
	defer c.rm.decide.Unlock()
	now := time.Now().UTC()
	if why := c.rm.offReason(r.Workspace, false); why != "" {
		if r.State == store.RemediationPending {
			c.rm.endOff(ctx, r, now, why)
		}
		return r, fmt.Errorf("remediation %q: %w: %s", id, store.ErrConflict, why)
	}
	if hash != "" && hash != r.ChangeSetHash {
		return r, server.ErrHashMismatch
	}
	if r.State == store.RemediationPending && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
		if _, err := st.ExpireRemediations(ctx, now); err != nil {
			return r, err
		}
		return r, fmt.Errorf("remediation %q: %w: it expired at %s", id, store.ErrConflict, r.ExpiresAt.Format(time.RFC3339))
	}
	out, err := st.TransitionRemediation(ctx, id, []store.RemediationState{store.RemediationPending},
		store.Transition{State: store.RemediationApproved, At: now, By: "api"})
	if err == nil {
		c.rm.log.Info("remediation approved", "workspace", out.Workspace, "remediation", id)
		c.rm.wake()
	}
	return out, err
}

func (c remediationControl) Reject(ctx context.Context, id string) (store.Remediation, error) {
	out, err := c.rm.d.store.TransitionRemediation(ctx, id, []store.RemediationState{store.RemediationPending, store.RemediationApproved},
		store.Transition{State: store.RemediationRejected, At: time.Now().UTC(), By: "api", Reason: "rejected"})
	if err == nil {
		c.rm.log.Info("remediation rejected", "workspace", out.Workspace, "remediation", id)
		c.rm.metrics.Finished(string(store.RemediationRejected))
	}
	return out, err
}

func (c remediationControl) Status(context.Context) (enabled, paused bool, err error) {
	return c.rm.d.cfg.Load().Remediation.On(), c.rm.paused.Load(), nil
}

func (c remediationControl) SetPaused(ctx context.Context, paused bool) error {
	if err := c.rm.d.store.SetRemediationPaused(ctx, paused); err != nil {
		return err
	}
	c.rm.paused.Store(paused)
	c.rm.log.Warn("remediation kill switch", "paused", paused)
	c.rm.wake()
	return nil
}
