package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/terraform/tfsession"
)

// Result is what became of one remediation.
type Result string

// Results. None closes an incident by itself: a clean detection run does.
// After failed with Outcome.ApplyStarted, keep the incident open even when
// detection stops reporting drift: the failed apply persisted the
// refreshed state, so a resource it failed to re-create is then a planned
// create with no drift behind it (pending), not drift.
const (
	// ResultApplied: the approved change set was applied and a fresh plan
	// shows no drift and no change left at any approved address.
	ResultApplied Result = "applied"
	// ResultFailed: a step failed. If Outcome.ApplyStarted, the apply
	// itself failed and may have changed part of the change set.
	ResultFailed Result = "failed"
	// ResultVerificationFailed: the apply succeeded but the verification
	// plan could not run or still shows drift or changes at an approved
	// address (Outcome.Residual).
	ResultVerificationFailed Result = "verification_failed"
	// ResultRefused: nothing was applied (Outcome.Refusals say why).
	ResultRefused Result = "refused"
)

// ErrLeftRunning is in the error of an apply that goes on without this
// daemon: it stopped while a Kubernetes Job applies (the kubernetes
// runner's Remediate). The controller then records nothing: the next
// daemon awaits the Job.
var ErrLeftRunning = errors.New("the apply goes on without this daemon")

// Outcome of Applier.Apply. It holds addresses, actions and attribute
// paths, never a value.
type Outcome struct {
	Result Result `json:"result"`
	// Reason is one secret-free line: why it was refused or failed, or
	// what is left after a failed verification.
	Reason   string    `json:"reason,omitempty"`
	Refusals []Refusal `json:"refusals,omitempty"`
	// Before is the change set of the fresh pre-apply plan: what the apply
	// performed (Result applied), or would have (refused on plan_changed).
	Before ChangeSet `json:"before"`
	// Residual lists the verification plan's drift and pending findings at
	// approved addresses (Result verification_failed).
	Residual []drift.Finding `json:"residual,omitempty"`
	// ApplyStarted is set once `terraform apply` was started: from then
	// on, infrastructure and state may have changed, even on failure.
	ApplyStarted bool `json:"apply_started"`
	// StateLock is what a check of the state lock found after a failed
	// apply that may have left it behind (killed, or no reason given: see
	// LockCheck); nil when no check was needed or made.
	StateLock *LockCheck `json:"state_lock,omitempty"`
	// Tool is the binary and version, e.g. "terraform 1.11.4".
	Tool string `json:"tool,omitempty"`
	// Commit is the resolved commit of a git source.
	Commit string        `json:"commit,omitempty"`
	Phases []drift.Phase `json:"phases,omitempty"`
}

// Applier applies an approved change set to one workspace. An Applier
// holds that workspace's rules and envelope: build one per remediation
// (it is cheap) from the current configuration. It is safe for concurrent
// use on different workspaces; the caller must make sure that no other
// run of the same workspace is in flight (the scheduler's per-workspace
// slot): Terraform's state lock guards the apply itself, but a detection
// run (which plans without the lock) would report the apply's transient
// state.
type Applier struct {
	Logger *slog.Logger
	// Rules are the workspace's classification rules, as for detection.
	Rules policy.Rules
	// Envelope is the workspace's safety envelope.
	Envelope Envelope
	// LockTimeout is how long the plan and the apply wait for the state
	// lock. Zero fails at once, and the remediation is refused as
	// state_locked (someone else is applying: re-detect later).
	LockTimeout time.Duration
	// Paused is the global kill switch, consulted before anything runs
	// and again right before the apply; nil means never paused. To stop an
	// apply in flight, cancel its context: Terraform gets SIGINT and stops
	// gracefully (the outcome is failed, ApplyStarted set).
	Paused func() bool
	// Proceed, if set, is asked right before the apply, after Paused: a
	// non-nil Refusal refuses the remediation with it, and nothing is
	// applied. A Kubernetes Job's pod, which cannot see the daemon's kill
	// switch, asks the daemon through it (runner/remote), failing closed.
	Proceed func(ctx context.Context) *Refusal

	// beforeApply runs right before the apply, afterApply between the
	// apply and the verification plan (test seams).
	beforeApply, afterApply func()
}

// Apply performs an approved remediation in one fresh sandbox, the way the
// local runner runs a detection (0700 temp dir, copied code, scrubbed
// environment, var files rather than -var, secrets redacted from every
// reason), driving Terraform through the same tfsession.Session steps:
//
//  1. init (without the shared plugin cache: see tfsession.InitOptions);
//     refused as state_in_sandbox when the state is a file in the copy;
//  2. plan -out WITH the state lock (never -lock=false); refused as
//     state_locked when another operation holds it;
//  3. show -json, streamed into planparse and a value-aware check that
//     every planned value of a drifted resource equals its prior state
//     (not_a_revert otherwise);
//  4. classify the fresh plan (policy.Classify with Rules), run Evaluate,
//     and refuse unless the fresh ChangeSet's Hash equals approved.Hash()
//     (plan_changed: the plan changed between approval and apply);
//  5. apply exactly that saved plan file, lock on; if the apply was
//     killed (or failed without a reason), check whether it left the state
//     lock behind (see LockCheck) and say so in the reason;
//  6. a fresh verification plan (without the lock, like detection: it
//     changes nothing) must show no drift and no change at any approved
//     address.
//
// Why a fresh plan rather than the detection run's saved plan file: the
// local runner deletes its sandbox (and the plan file, which holds
// secrets) when the run ends, and a Kubernetes Job's file never reaches
// the daemon; days may pass before an approval. The hash comparison gives
// the same guarantee as applying the approved file (the identical change
// set: same resources, actions and attribute paths) and the revert check
// adds the values the value-free hash cannot see. Applying the saved plan
// of step 2 then closes the window between check and apply: Terraform
// refuses a saved plan whose state has moved on.
//
// The returned error is non-nil exactly when Result is failed; it is then
// a *terraform.Error naming the phase (setup, source, init, workspace, plan,
// show, apply) with the same one-line reason as the outcome, and it
// matches terraform.ErrTimeout or context.Canceled when that is the cause.
func (a *Applier) Apply(ctx context.Context, req terraform.Request, approved ChangeSet) (out Outcome, err error) {
	log := a.logger().With("workspace", req.Workspace, "run_id", req.RunID)
	defer func() {
		attrs := []any{"result", out.Result, "reason", out.Reason, "resources", out.Before.Len(), "apply_started", out.ApplyStarted}
		if out.Result == ResultApplied {
			log.Info("remediation finished", attrs...)
		} else {
			log.Warn("remediation finished", attrs...)
		}
	}()
	if approved.Len() == 0 {
		return refused(out, Refusal{Code: CodeNothingApproved, Reason: "the approved change set is empty: nothing to apply"}), nil
	}
	if a.paused() {
		return refused(out, pausedRefusal), nil
	}

	ctx, marker, grace, end := sandbox.Begin(ctx, req)
	defer end()

	s, err := a.newSession(ctx, req, marker, grace, &out)
	defer s.close()
	if err != nil {
		return s.fail(ctx, &out, err)
	}
	return a.run(ctx, s, approved, &out)
}

var pausedRefusal = Refusal{Code: CodePaused, Reason: "remediation is paused (global kill switch)"}

func (a *Applier) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

func (a *Applier) paused() bool { return a.Paused != nil && a.Paused() }

func refused(out Outcome, rs ...Refusal) Outcome {
	out.Result = ResultRefused
	out.Refusals = rs
	out.Reason = summarize(rs)
	return out
}

// stepError is a failed step of this package's own (the state check): its
// phase and the underlying error. Session steps, and Prepare, fail with a
// *terraform.Error of their own.
type stepError struct {
	phase string
	err   error
}

func (e *stepError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// session is one remediation's sandbox and its Terraform session.
type session struct {
	req                 terraform.Request
	*tfsession.Prepared // nil when Prepare failed
}

// newSession prepares the sandbox and the Terraform session
// (tfsession.Prepare). The session it returns, even with an error, is to
// be closed.
func (a *Applier) newSession(ctx context.Context, req terraform.Request, marker string, grace time.Duration, out *Outcome) (*session, error) {
	s := &session{req: req}
	p, err := tfsession.Prepare(ctx, tfsession.PrepareOptions{
		// The log, if the request has one (the apply run's), gets what a
		// detection's gets: init's output and the plans and the apply
		// rendered from -json without values. Each step's reason comes
		// from its own stderr, which the refusals (state lock, stale plan)
		// read: the -json steps' error diagnostics are written there too.
		Options: tfsession.Options{
			Request: req, Log: req.Log, Grace: grace, StepDiagnostics: true, LockTimeout: a.LockTimeout,
			Phases: tfsession.NewPhases(&out.Phases),
		},
		DirPrefix: sandbox.ApplyDirPrefix, Marker: marker,
		Sourced: func(p *tfsession.Prepared) { out.Commit = p.Commit },
	})
	if err != nil {
		// An outcome's reason is one line: a failed setup's or source's
		// first.
		var re *terraform.Error
		if errors.As(err, &re) {
			line := sandbox.FirstLine(re.Reason)
			err = &terraform.Error{Phase: re.Phase, Reason: line, Err: errors.New(line)}
		}
		return s, err
	}
	s.Prepared = p
	out.Tool = sandbox.ToolName(p.Session.Binary())
	return s, nil
}

func (s *session) close() {
	if s.Prepared != nil {
		s.Prepared.Close()
	}
}

// fail turns a failed step into a failed outcome and its *terraform.Error.
func (s *session) fail(ctx context.Context, out *Outcome, err error) (Outcome, error) {
	var (
		red    sandbox.Redactor
		stderr string
	)
	if s.Prepared != nil {
		red, stderr = s.Redactor, s.Session.Stderr()
	}
	var re *terraform.Error
	var se *stepError
	switch {
	case errors.As(err, &se):
		re = &terraform.Error{Phase: se.phase, Reason: red.Apply(sandbox.Diagnostic(stderr, se.err)), Err: errors.New(red.Apply(sandbox.FirstLine(sandbox.ErrorText(se.err))))}
	case errors.As(err, &re):
		// Prepare's or a session step's, already redacted.
	default:
		re = &terraform.Error{Phase: "setup", Reason: red.Apply(sandbox.Diagnostic(stderr, err)), Err: errors.New(red.Apply(sandbox.FirstLine(sandbox.ErrorText(err))))}
	}
	if ce := context.Cause(ctx); ce != nil {
		// Report timeouts and cancellation as such, whatever Terraform printed.
		re.Reason = ce.Error()
		if errors.Is(ce, terraform.ErrTimeout) {
			re.Reason = fmt.Sprintf("%v after %s", ce, s.req.Timeout)
		}
		re.Err = errors.Join(ce, re.Err)
	}
	out.Result = ResultFailed
	out.Reason = re.Error()
	return *out, re
}

// planLocked runs step 2's plan under the state lock; locked says that
// another operation held it for all of LockTimeout. Terraform waits for a
// lock whose holder it can read, but gives up at once when it cannot read
// one: the lock was released between its attempt and its read (OpenTofu's
// S3 lock file), or it has no info file (the local backend's lock taken by
// another program). The plan is asked again then, every lockRetry, while
// LockTimeout lasts: nothing has been applied yet.
func (a *Applier) planLocked(ctx context.Context, tf *tfsession.Session, planFile string) (locked bool, err error) {
	deadline := time.Now().Add(a.LockTimeout)
	opts := tfsession.PlanOptions{Out: planFile, Lock: true, JSON: true}
	for {
		_, err = tf.Plan(ctx, opts)
		if err == nil || !isLockError(tf.Stderr()) || ctx.Err() != nil {
			return false, err
		}
		left := time.Until(deadline)
		if parseLockInfo(tf.Stderr()).ID != "" || left < lockRetry+time.Second {
			return true, err
		}
		a.logger().Info("state lock's holder unreadable; asking again", "left", left.Round(time.Second))
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(lockRetry):
		}
		opts.LockWait = time.Until(deadline)
	}
}

// lockRetry is how long planLocked waits before asking for a lock whose
// holder Terraform could not read.
const lockRetry = time.Second

// run performs steps 1 to 6 of Apply.
func (a *Applier) run(ctx context.Context, s *session, approved ChangeSet, out *Outcome) (Outcome, error) {
	tf := s.Session
	if err := tf.Init(ctx, tfsession.InitOptions{}); err != nil {
		return s.fail(ctx, out, err)
	}
	out.Tool = tf.Version(ctx)
	if err := tf.WorkspaceSelect(ctx); err != nil {
		return s.fail(ctx, out, err)
	}
	why, err := stateInSandbox(ctx, s.ModuleDir, s.Env, s.req.TFWorkspace)
	if err != nil {
		return s.fail(ctx, out, &stepError{"init", err})
	}
	if why != "" {
		return refused(*out, Refusal{Code: CodeStateInSandbox, Reason: "remediation needs state that outlives the sandbox: " + why}), nil
	}
	tf.Phase("init")

	planFile := filepath.Join(s.Dir, "remediate.tfplan")
	if locked, err := a.planLocked(ctx, tf, planFile); locked {
		return refused(*out, Refusal{Code: CodeStateLocked, Reason: lockedReason("another operation holds the state lock", tf.Stderr())}), nil
	} else if err != nil {
		return s.fail(ctx, out, err)
	}
	tf.Phase("plan")
	// The plan JSON goes to planparse and, as digests, to the revert check.
	var nr map[string][]string
	plan, err := tf.Show(ctx, planFile, func(r io.Reader) (err error) {
		nr, err = notReverted(r)
		return err
	})
	if err != nil {
		return s.fail(ctx, out, err)
	}
	tf.Phase("show")
	tf.LogChanges(plan)

	findings := policy.Classify(plan, a.Rules)
	cs, refusals := Evaluate(a.Envelope, findings, plan)
	out.Before = cs
	for _, addr := range sortedKeys(nr) {
		if _, ok := cs.Lookup(addr); ok {
			refusals = append(refusals, Refusal{Code: CodeNotARevert, Address: addr, Reason: fmt.Sprintf(
				"%s: the apply would set %s to a value other than the last applied one: a configuration change, not a drift revert",
				addr, strings.Join(nr[addr], ", "))})
		}
	}
	if diff := DescribeDiff(approved, cs); diff != "" {
		refusals = append([]Refusal{{Code: CodePlanChanged, Reason: "the plan changed since approval (" + diff + "): nothing applied; re-detect"}}, refusals...)
	}
	if len(refusals) > 0 {
		return refused(*out, refusals...), nil
	}
	if a.paused() {
		return refused(*out, pausedRefusal), nil
	}
	if a.Proceed != nil {
		if r := a.Proceed(ctx); r != nil {
			return refused(*out, *r), nil
		}
	}

	if a.beforeApply != nil {
		a.beforeApply()
	}
	out.ApplyStarted = true
	if err := tf.Apply(ctx, planFile); err != nil {
		if ctx.Err() == nil {
			switch stderr := tf.Stderr(); {
			case isLockError(stderr):
				out.ApplyStarted = false
				return refused(*out, Refusal{Code: CodeStateLocked, Reason: lockedReason("another operation took the state lock before the apply", stderr)}), nil
			case strings.Contains(stderr, "Saved plan is stale"):
				out.ApplyStarted = false
				return refused(*out, Refusal{Code: CodePlanChanged, Reason: "the state changed between plan and apply (saved plan is stale): nothing applied; re-detect"}), nil
			}
		}
		o, ferr := s.fail(ctx, out, err)
		return a.withLockCheck(ctx, s, err, o, ferr)
	}
	tf.Phase("apply")
	if a.afterApply != nil {
		a.afterApply()
	}
	return a.verify(ctx, s, cs, out)
}

// verify runs the verification plan and checks the approved addresses.
func (a *Applier) verify(ctx context.Context, s *session, approved ChangeSet, out *Outcome) (Outcome, error) {
	failed := func(reason string) (Outcome, error) {
		out.Result = ResultVerificationFailed
		out.Reason = reason
		if ce := context.Cause(ctx); ce != nil {
			// Cut short (shutdown, cancel, timeout) after a successful
			// apply: applied, not verified. The detection that follows
			// (at once, or at the next start) is the verification.
			out.Result = ResultApplied
			out.Reason = "applied; the verification plan was cut short (" + ce.Error() + "): the next detection checks the workspace"
		}
		return *out, nil
	}
	verifyFile := filepath.Join(s.Dir, "verify.tfplan")
	// Without the lock, like detection: it changes nothing.
	if _, err := s.Session.Plan(ctx, tfsession.PlanOptions{Out: verifyFile, JSON: true}); err != nil {
		return failed("verify: plan: " + reason(err))
	}
	plan, err := s.Session.Show(ctx, verifyFile)
	if err != nil {
		return failed("verify: show: " + reason(err))
	}
	s.Session.Phase("verify")
	if plan.Errored {
		return failed("verify: terraform reported an errored plan")
	}
	out.Residual = residual(policy.Classify(plan, a.Rules), approved.Addresses())
	if len(out.Residual) > 0 {
		var items []string
		for _, f := range out.Residual {
			items = append(items, fmt.Sprintf("%s (%s %s)", f.Address, f.Kind, f.Action))
		}
		return failed("still not converged after apply: " + strings.Join(items, ", "))
	}
	out.Result = ResultApplied
	return *out, nil
}

// reason is a failed session step's one-line, redacted reason.
func reason(err error) string {
	var re *terraform.Error
	if errors.As(err, &re) {
		return re.Reason
	}
	return sandbox.FirstLine(sandbox.ErrorText(err))
}

// residual returns the counted drift and pending findings at addrs.
func residual(findings []drift.Finding, addrs []string) []drift.Finding {
	var out []drift.Finding
	for _, f := range findings {
		if f.Ignored || (f.Kind != drift.KindDrift && f.Kind != drift.KindPending) {
			continue
		}
		if slices.Contains(addrs, f.Address) {
			out = append(out, f)
		}
	}
	return out
}
