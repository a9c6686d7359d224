package engine

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/terraform/tfsession"
)

// Lock states a LockCheck reports.
const (
	// LockReleased: the check took the state lock and gave it back: no
	// lock is left behind.
	LockReleased = "released"
	// LockHeld: the state lock is still held, most likely by the failed
	// apply itself (killed before it could release it).
	LockHeld = "held"
	// LockUnknown: the check itself failed for another reason.
	LockUnknown = "unknown"
)

// LockCheck is what became of the state lock after a failed apply that
// may have left it behind (Outcome.StateLock; needsLockCheck): an apply
// that was killed (SIGKILL, the OOM killer, the kill after the grace that
// follows a cancellation or a timeout) cannot release the lock it holds,
// and every later apply of the state then fails until someone
// force-unlocks it.
type LockCheck struct {
	State string `json:"state"`
	// ID, Operation, Who and Created describe a held lock, as Terraform's
	// "Lock Info:" block names it (any may be empty).
	ID        string `json:"id,omitempty"`
	Operation string `json:"operation,omitempty"`
	Who       string `json:"who,omitempty"`
	Created   string `json:"created,omitempty"`
	// Reason is why the check failed (State unknown): one redacted line.
	Reason string `json:"reason,omitempty"`
}

// note is the part of a failed apply's reason that says what became of
// the lock, and what to do about a held one.
func (c LockCheck) note() string {
	switch c.State {
	case LockReleased:
		return "the state lock was released (checked after the apply)"
	case LockHeld:
		id := c.ID
		if id == "" {
			id = "LOCK_ID"
		}
		return "the state lock is still held" + lockInfo{ID: c.ID, Operation: c.Operation, Who: c.Who, Created: c.Created}.holder() +
			", most likely left by this apply, which could not release it: this remediation is not retried; make sure no one is applying to this state, then run `terraform force-unlock " + id + "`"
	}
	why := c.Reason
	if why == "" {
		why = "no answer"
	}
	return "whether the state lock was released is unknown (the check failed: " + why + "): make sure no lock is left before the next apply"
}

// lockCheckTimeout bounds the lock check: a plan that only takes and
// gives back the lock.
const lockCheckTimeout = 2 * time.Minute

// checkLock finds out whether the state lock is free after a failed
// apply: a plan with the lock and no lock wait (-lock=true
// -lock-timeout=0s), which writes no state, in the same sandbox (already
// initialised, its workspace selected). Terraform takes and gives back a
// free lock; a held one fails it with the "Lock Info:" block that names
// the holder. It never force-unlocks: whether the holder is gone is for a
// person to decide.
//
// It runs even when ctx is done (a cancelled or timed-out apply is where
// a kill after the grace leaves the lock), under a context of its own
// (lockCheckTimeout) and its own run marker: the sandbox's sweep of the
// apply's processes, due grace+2s after ctx ends, must not kill the check
// while it holds the lock, which would leave one behind itself.
func (a *Applier) checkLock(ctx context.Context, s *session) LockCheck {
	base := ctx
	if ctx.Err() != nil {
		base = context.WithoutCancel(ctx)
	}
	req := s.req
	req.Timeout = lockCheckTimeout
	cctx, marker, grace, end := sandbox.Begin(base, req)
	defer end()
	env := maps.Clone(s.Env)
	env[sandbox.MarkerEnv] = marker
	tf, err := tfsession.Open(tfsession.Options{
		Request: req, Dir: s.Dir, ModuleDir: s.ModuleDir, Env: env, Secrets: s.Secrets,
		Grace: grace, StepDiagnostics: true, // LockTimeout zero: -lock-timeout=0s
	})
	if err != nil {
		return LockCheck{State: LockUnknown, Reason: reason(err)}
	}
	defer tf.Close()
	_, err = tf.Plan(cctx, tfsession.PlanOptions{Out: filepath.Join(s.Dir, "lockcheck.tfplan"), Lock: true})
	c := lockCheckOf(err, tf.Stderr())
	for _, f := range []*string{&c.ID, &c.Operation, &c.Who, &c.Created} {
		*f = s.Redactor.Apply(*f)
	}
	if c.State == LockUnknown && cctx.Err() != nil {
		c.Reason = context.Cause(cctx).Error()
		if errors.Is(context.Cause(cctx), terraform.ErrTimeout) {
			c.Reason += " after " + lockCheckTimeout.String()
		}
	}
	a.logger().Info("state lock checked after a failed apply", "workspace", s.req.Workspace, "run_id", s.req.RunID,
		"lock", c.State, "lock_id", c.ID)
	return c
}

// lockCheckOf reads the check's result: its error and its stderr.
func lockCheckOf(err error, stderr string) LockCheck {
	switch {
	case err == nil:
		return LockCheck{State: LockReleased}
	case isLockError(stderr):
		l := parseLockInfo(stderr)
		return LockCheck{State: LockHeld, ID: l.ID, Operation: l.Operation, Who: l.Who, Created: l.Created}
	}
	return LockCheck{State: LockUnknown, Reason: reason(err)}
}

// needsLockCheck reports whether a failed apply may have left its state
// lock behind, from the apply's error text (its first line) and stderr:
// when Terraform did not stop by itself (killed by a signal: SIGKILL, the
// OOM killer, the kill after the grace that follows a cancellation; in
// the jail, an exit status of 128+signal), when it said it could not
// release the lock, or when it gave no reason at all (a crash). A
// Terraform that stopped by itself with its diagnostics, after a provider
// error or an interrupt, released the lock on its way out, or said it
// could not: no check is needed, and none is made (the check takes the
// lock itself, and a kill of the daemon or the pod during it would leave
// one).
func needsLockCheck(errText, stderr string) bool {
	if strings.HasPrefix(errText, "signal: ") || strings.Contains(stderr, "Error releasing the state lock") {
		return true
	}
	if code, ok := strings.CutPrefix(errText, "exit status "); ok {
		if n, err := strconv.Atoi(code); err == nil && n > 128 {
			return true
		}
	}
	return !diagnosed.MatchString(stderr)
}

// diagnosed matches an error diagnostic of Terraform's stderr.
var diagnosed = regexp.MustCompile(`(?m)^(?:│\s*)?Error: `)

// withLockCheck checks the state lock after a failed apply that may have
// left it behind (needsLockCheck of applyErr, the apply step's error, and
// its stderr), and adds the result to the outcome and error of s.fail:
// the check's note ends the one-line reason of both.
func (a *Applier) withLockCheck(ctx context.Context, s *session, applyErr error, out Outcome, err error) (Outcome, error) {
	errText := sandbox.FirstLine(sandbox.ErrorText(applyErr))
	var re *terraform.Error
	if errors.As(applyErr, &re) && re.Err != nil {
		errText = sandbox.FirstLine(sandbox.ErrorText(re.Err))
	}
	if !needsLockCheck(errText, s.Session.Stderr()) {
		return out, err
	}
	c := a.checkLock(ctx, s)
	out.StateLock = &c
	if errors.As(err, &re) {
		re.Reason += "; " + c.note()
		out.Reason = re.Error()
	} else {
		out.Reason += "; " + c.note()
	}
	return out, err
}
