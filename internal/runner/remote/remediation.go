package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Remediation makes a Spec a remediation run: instead of a detection, the
// pod applies Approved with engine.Applier (fresh locked plan, change-set
// hash compared with the approved one, revert check, apply of that saved
// plan, verification plan) and delivers the engine.Outcome. Like the
// rest of the spec it holds no value: addresses, actions, attribute paths,
// the workspace's rules and envelope.
type Remediation struct {
	// Approved is the change set approved for this workspace;
	// ChangeSetHash is its Hash, checked on decoding: a damaged spec is
	// refused. (It is no defence against someone who can write the run's
	// Secret: they could recompute it. The Secret is created by the daemon
	// and mounted only into the run's pod.)
	Approved      engine.ChangeSet `json:"approved"`
	ChangeSetHash string           `json:"change_set_hash"`
	Envelope      Envelope         `json:"envelope"`
	Rules         Rules            `json:"rules"`
	// LockTimeout is how long the plan and the apply wait for the state
	// lock (0: fail at once; refused as state_locked).
	LockTimeout Duration `json:"lock_timeout,omitempty"`
}

// Envelope is engine.Envelope on the wire.
type Envelope struct {
	AllowActions []string `json:"allow_actions,omitempty"`
	MaxResources int      `json:"max_resources,omitempty"`
}

// Rules is policy.Rules on the wire (globs as their patterns).
type Rules struct {
	Forbidden []policy.Glob `json:"forbidden,omitempty"`
	Ignore    []IgnoreRule  `json:"ignore,omitempty"`
}

// IgnoreRule is policy.IgnoreRule on the wire.
type IgnoreRule struct {
	Address    policy.Glob   `json:"address"`
	Attributes []policy.Glob `json:"attributes,omitempty"`
}

// RemediationOf is the wire form of what a pod needs to apply approved as
// a would: its rules, envelope and lock timeout. a's Logger and Paused stay
// in the daemon: the kill switch is checked before the Job is created, and
// the pod asks the daemon again right before the apply (Spec.ProceedURL).
func RemediationOf(a *engine.Applier, approved engine.ChangeSet) *Remediation {
	r := &Remediation{
		Approved:      approved,
		ChangeSetHash: approved.Hash(),
		Envelope:      Envelope{AllowActions: a.Envelope.AllowActions, MaxResources: a.Envelope.MaxResources},
		Rules:         Rules{Forbidden: a.Rules.Forbidden},
		LockTimeout:   Duration(a.LockTimeout),
	}
	for _, ig := range a.Rules.Ignore {
		r.Rules.Ignore = append(r.Rules.Ignore, IgnoreRule{Address: ig.Address, Attributes: ig.Attributes})
	}
	return r
}

// Applier is the engine.Applier the pod runs (RemediationOf's inverse),
// logging to log. It has no Paused: the daemon holds the kill switch, and
// the pod asks it through Applier.Proceed (see Apply); deleting the Job
// (cancel) stops an apply in flight.
func (r *Remediation) Applier(log *slog.Logger) *engine.Applier {
	a := &engine.Applier{
		Logger:      log,
		Rules:       policy.Rules{Forbidden: r.Rules.Forbidden},
		Envelope:    engine.Envelope{AllowActions: r.Envelope.AllowActions, MaxResources: r.Envelope.MaxResources},
		LockTimeout: time.Duration(r.LockTimeout),
	}
	for _, ig := range r.Rules.Ignore {
		a.Rules.Ignore = append(a.Rules.Ignore, policy.IgnoreRule{Address: ig.Address, Attributes: ig.Attributes})
	}
	return a
}

func (r *Remediation) validate() error {
	var errs []error
	if r.Approved.Len() == 0 {
		errs = append(errs, errors.New("remediation.approved: the change set is empty"))
	}
	if h := r.Approved.Hash(); h != r.ChangeSetHash {
		errs = append(errs, fmt.Errorf("remediation.change_set_hash: %q is not the approved change set's hash %q", r.ChangeSetHash, h))
	}
	env := engine.Envelope{AllowActions: r.Envelope.AllowActions, MaxResources: r.Envelope.MaxResources}
	if err := env.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("remediation.envelope: %w", err))
	}
	if r.LockTimeout < 0 {
		errs = append(errs, errors.New("remediation.lock_timeout: must not be negative"))
	}
	return errors.Join(errs...)
}

// ApplyFunc performs a remediation spec in the pod, asking proceed right
// before the apply (engine.Applier.Proceed: the daemon's proceed
// check); Apply is the real one.
type ApplyFunc func(ctx context.Context, req terraform.Request, rem *Remediation, proceed func(context.Context) *engine.Refusal) (engine.Outcome, error)

// Apply returns the pod's ApplyFunc: rem.Applier(log).Apply with proceed
// as its Proceed.
func Apply(log *slog.Logger) ApplyFunc {
	return func(ctx context.Context, req terraform.Request, rem *Remediation, proceed func(context.Context) *engine.Refusal) (engine.Outcome, error) {
		a := rem.Applier(log)
		a.Proceed = proceed
		return a.Apply(ctx, req, rem.Approved)
	}
}

// OutcomeOf packs Applier.Apply's return values for runID: the outcome
// and, for a failed one, the error as ResultOf packs it.
func OutcomeOf(runID string, out engine.Outcome, err error) Result {
	res := ResultOf(runID, runner.Result{}, err)
	res.Outcome = &out
	return res
}

// UnpackOutcome returns what the remote Applier.Apply returned: the outcome
// and, for a failed one, a *terraform.Error. A result that is not a
// remediation outcome is a failed outcome.
func (r Result) UnpackOutcome() (engine.Outcome, error) {
	if r.Outcome == nil {
		// Only a pod of another build would deliver this; whether its
		// apply began is unknown, so it may have.
		err := &terraform.Error{Phase: "result", Reason: "remote result is not a remediation outcome"}
		return engine.Outcome{Result: engine.ResultFailed, Reason: err.Error(), ApplyStarted: true}, err
	}
	if r.Error == nil {
		return *r.Outcome, nil
	}
	return *r.Outcome, r.Error.unpack()
}

// validOutcome checks an outcome against the error that came with it: an
// error exactly when the outcome is failed.
func validOutcome(o *engine.Outcome, failed bool) error {
	switch o.Result {
	case engine.ResultApplied, engine.ResultVerificationFailed, engine.ResultRefused:
		if failed {
			return fmt.Errorf("outcome %s with an error", o.Result)
		}
	case engine.ResultFailed:
		if !failed {
			return errors.New("failed outcome without an error")
		}
	default:
		return fmt.Errorf("unknown outcome result %q", o.Result)
	}
	return nil
}
