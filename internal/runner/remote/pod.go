package remote

import (
	"context"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// RunInPod is the runner container of a run pod (`driftwatch runner --spec
// PATH --socket PATH`), the one that runs Terraform and has no token. It
// loads the spec, makes its process non-dumpable (so that processes of the
// same user, Terraform's and the providers', can neither ptrace it nor
// reach its file descriptors through /proc), connects to the reporter's
// handoff socket at socketPath (trying again until the spec's deadline)
// and only then runs the spec with local (the local runner, in the pod's
// sandbox), or for a remediation spec applies it with apply (Apply:
// engine.Applier, in the same sandbox; right before `terraform apply`
// it asks the daemon's proceed check through the reporter, and applies
// nothing unless the daemon answers that it may). It then hands the result
// or outcome, failed runs included, to the reporter, which delivers it.
//
// The run's log (terraform.Request.Log: what the local runner writes,
// already redacted) goes to the reporter as it is written, in log frames on
// the same connection, from a bounded queue: a slow reporter makes lines
// drop (a marker line counts them), never the run wait. Once the run is
// over the queue is flushed, for at most 30 s, before the result.
//
// The connection is made before any process of the run exists and the
// reporter accepts no other: no process of the run can hand over a result
// of its own, nor write into this one's connection (close-on-exec, not
// inherited; the process is non-dumpable).
//
// It returns nil once the reporter has taken the result, whatever the
// run's outcome: a Terraform failure is a result, and the container then
// exits 0. It returns an error only when the spec is unusable or the
// handoff failed; main prints it to stderr and exits non-zero, which fails
// the Job (podFailurePolicy), and the daemon reports the pod's exit and its
// last log lines (terminationMessagePolicy FallbackToLogsOnError).
//
// The handoff outlives ctx: when the pod is being stopped (SIGTERM) the run
// is cut short, but its result is still handed over until the spec's
// deadline, as long as the kubelet lets the process live.
func RunInPod(ctx context.Context, specPath, socketPath string, local runner.Runner, apply ApplyFunc) error {
	spec, err := LoadSpec(specPath)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	// main does this for every driftwatch process; the handoff depends on
	// it, so it is not left to the caller.
	if err := sandbox.SetNonDumpable(); err != nil {
		return fmt.Errorf("runner: make the process non-dumpable: %w", err)
	}
	dctx, cancel := context.WithDeadline(ctx, spec.ExpiresAt)
	h, err := dialHandoff(dctx, socketPath)
	cancel()
	if err != nil {
		return fmt.Errorf("runner: connect to the reporter at %s: %w", socketPath, err)
	}
	defer h.close()

	// The handoff outlives ctx: the log and the result of a run cut short
	// still go over it.
	hctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), spec.ExpiresAt)
	defer cancel()
	req := spec.Request()
	log := startPodLog(hctx, h)
	req.Log = log
	var out Result
	if spec.Remediation != nil {
		o, err := apply(ctx, req, spec.Remediation, func(ctx context.Context) *engine.Refusal {
			return h.proceed(ctx)
		})
		out = OutcomeOf(spec.RunID, o, err)
	} else {
		res, err := local.Run(ctx, req)
		out = ResultOf(spec.RunID, res, err)
	}

	log.finish(logFlushWait)
	if err := h.deliver(hctx, out); err != nil {
		return fmt.Errorf("runner: run %s: hand the result over to the reporter: %w", spec.RunID, err)
	}
	return nil
}
