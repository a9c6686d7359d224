package remote

import (
	"context"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/runner"
)

// RunInPod is `driftwatch runner --spec PATH`: it loads the spec, runs it
// with local (the local runner, in the pod's sandbox), or for a
// remediation spec applies it with apply (Apply: remediate.Applier, in the
// same sandbox; right before `terraform apply` it asks the daemon's
// proceed check at the spec's ProceedURL with a Checker, and applies
// nothing unless the daemon answers that it may), and delivers the result
// or outcome, failed runs included, to the spec's callback URL.
//
// It returns nil once the result is delivered, whatever the run's outcome:
// a Terraform failure is a delivered result, and the Job then completes. It
// returns an error only when the spec is unusable or the result could not be
// delivered; main prints it to stderr and exits non-zero, which fails the
// Job (podFailurePolicy), and the daemon reports the pod's exit and its
// last log lines (the container's terminationMessagePolicy is
// FallbackToLogsOnError). Errors never include the token.
//
// Delivery outlives ctx: when the pod is being stopped (SIGTERM) the run is
// cut short, but its result is still offered until the spec's deadline, as
// long as the kubelet lets the process live.
func RunInPod(ctx context.Context, specPath string, local runner.Runner, apply ApplyFunc) error {
	spec, err := LoadSpec(specPath)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	token, err := readToken(spec.TokenFile)
	if err != nil {
		return fmt.Errorf("runner: token: %w", err)
	}
	var out Result
	if spec.Remediation != nil {
		proceed := func(ctx context.Context) *remediate.Refusal {
			var c Checker
			return c.Check(ctx, spec.ProceedURL, token)
		}
		o, err := apply(ctx, spec.Request(), spec.Remediation, proceed)
		out = OutcomeOf(spec.RunID, o, err)
	} else {
		res, err := local.Run(ctx, spec.Request())
		out = ResultOf(spec.RunID, res, err)
	}

	pctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), spec.ExpiresAt)
	defer cancel()
	if err := Post(pctx, spec.CallbackURL, token, out); err != nil {
		return fmt.Errorf("runner: run %s: %w", spec.RunID, err)
	}
	return nil
}
