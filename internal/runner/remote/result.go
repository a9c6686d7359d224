package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Result is what a remote run delivers: the runner's result and, for a
// failed run, its error. Result is always set, because a failed run still
// reports its tool, phases and commit (the daemon records them); Error is
// nil for a successful run. A remediation run (Spec.Remediation) delivers
// its Outcome instead of a plan.
type Result struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// Result.Plan is the value-free parsed plan: no plan JSON and no
	// attribute value ever crosses the network.
	Result runner.Result `json:"result"`
	Error  *Error        `json:"error,omitempty"`
	// Outcome is a remediation run's outcome (value-free: result, reason,
	// refusals, residual findings, phases, tool); nil for a detection.
	Outcome *engine.Outcome `json:"outcome,omitempty"`
}

// Error is terraform.Error on the wire.
type Error struct {
	Phase  string `json:"phase"`
	Reason string `json:"reason,omitempty"`
	// Detail is the message of terraform.Error.Err (already secret-free: the
	// local runner redacts it).
	Detail string `json:"detail,omitempty"`
	// Timeout and Canceled preserve errors.Is(err, terraform.ErrTimeout) and
	// errors.Is(err, context.Canceled) across the wire.
	Timeout  bool `json:"timeout,omitempty"`
	Canceled bool `json:"canceled,omitempty"`
}

// ResultOf packs a runner's return values for runID.
func ResultOf(runID string, res runner.Result, err error) Result {
	out := Result{Version: Version, RunID: runID, Result: res}
	if err == nil {
		return out
	}
	e := &Error{
		Timeout:  errors.Is(err, terraform.ErrTimeout),
		Canceled: errors.Is(err, context.Canceled),
	}
	var re *terraform.Error
	if errors.As(err, &re) {
		e.Phase, e.Reason = re.Phase, re.Reason
		if re.Err != nil {
			e.Detail = re.Err.Error()
		}
	} else {
		e.Phase, e.Reason = "runner", err.Error()
	}
	out.Error = e
	return out
}

// Unpack returns what the remote runner returned, as runner.Run would: the
// result and, for a failed run, a *terraform.Error.
func (r Result) Unpack() (runner.Result, error) {
	if r.Outcome != nil {
		return runner.Result{}, &terraform.Error{Phase: "result", Reason: "remote result is a remediation outcome, not a plan"}
	}
	if r.Error == nil {
		if r.Result.Plan == nil && r.Result.Listed == nil {
			return r.Result, &terraform.Error{Phase: "result", Reason: "remote result has neither a plan, a scan's list nor an error"}
		}
		return r.Result, nil
	}
	return r.Result, r.Error.unpack()
}

// unpack is the *terraform.Error e stands for.
func (e *Error) unpack() error {
	var errs []error
	if e.Detail != "" {
		errs = append(errs, errors.New(e.Detail))
	}
	if e.Timeout {
		errs = append(errs, terraform.ErrTimeout)
	}
	if e.Canceled {
		errs = append(errs, context.Canceled)
	}
	re := &terraform.Error{Phase: e.Phase, Reason: e.Reason, Err: errors.Join(errs...)}
	if re.Reason == "" && re.Err == nil {
		re.Err = errors.New("remote run failed")
	}
	return re
}

func (r *Result) validate(runID string) error {
	if r.Version != Version {
		return fmt.Errorf("unsupported result version %d (this build speaks %d)", r.Version, Version)
	}
	if r.RunID != runID {
		return fmt.Errorf("result is for run %q, not %q", r.RunID, runID)
	}
	if r.Error != nil && r.Error.Phase == "" {
		return errors.New("error without a phase")
	}
	if r.Outcome != nil {
		if r.Result.Plan != nil {
			return errors.New("result has both a plan and a remediation outcome")
		}
		return validOutcome(r.Outcome, r.Error != nil)
	}
	if r.Error == nil && r.Result.Plan == nil && r.Result.Listed == nil {
		return errors.New("result has neither a plan, a scan's list nor an error")
	}
	if r.Result.Plan != nil && r.Result.Listed != nil {
		return errors.New("result has both a plan and a scan's list")
	}
	return nil
}
