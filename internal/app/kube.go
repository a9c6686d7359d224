package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/remediation"
	"github.com/driftwatch/driftwatch/internal/run"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// newKubeMode builds the kubernetes runner mode (kube.NewMode) from
// runner.kubernetes; proceed answers remediation pods' proceed checks
// (daemon.mayApply).
func newKubeMode(cfg *config.Config, log *slog.Logger, proceed remote.ProceedFunc) (*kube.Mode, error) {
	k := cfg.Runner.Kubernetes
	if k == nil {
		return nil, errors.New("kubernetes runner: runner.kubernetes is required")
	}
	return kube.NewMode(kube.ModeOptions{Kubeconfig: k.Kubeconfig, QPS: k.APIQPS, Burst: k.APIBurst, CallbackListen: k.CallbackListen, Config: kube.Config(k.Kube()),
		TLSCertFile: cfg.Server.TLSCertFile, TLSKeyFile: cfg.Server.TLSKeyFile, Proceed: proceed, Logger: log})
}

// adopt starts the runner's Watch and adopts the Jobs a previous daemon
// left running, marking their workspaces busy (run.Manager.Adopting). It
// returns the context runs run under: cancelled once Watch has stopped,
// which happens (in g) when ctx ends (awaited runs then end with
// kube.ErrStopped and their Jobs keep running for the next daemon) or
// Watch fails. From then on runs.Stop: no run starts.
func adopt(ctx context.Context, k *kube.Mode, g *errgroup.Group, runs *run.Manager, rem *remediation.Controller) (context.Context, []run.Adopted, error) {
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	watchDone := make(chan error, 1)
	go func() { watchDone <- k.Runner.Watch(watchCtx) }()
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	found, err := k.Runner.Adopt(actx)
	cancel()
	if err != nil {
		stopWatch()
		<-watchDone //nolint:errcheck // stopped here: the caller returns its own error
		return nil, nil, fmt.Errorf("kubernetes runner: adopt running jobs: %w", err)
	}
	adopted := make([]run.Adopted, 0, len(found))
	for _, a := range found {
		adopted = append(adopted, run.Adopted{Workspace: a.Workspace, RunID: a.RunID, Job: a.Job, Remediation: a.Remediation,
			Runner: a.Runner(rem, k.Runner)})
	}
	runs.Adopting(adopted)
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	g.Go(func() error {
		defer stopWatch()
		var err error
		select {
		case <-ctx.Done():
			runs.Stop() // no run starts from here on
			stopWatch()
			<-watchDone //nolint:errcheck // stopped here: the caller returns its own error
		case err = <-watchDone:
			runs.Stop()
			err = fmt.Errorf("kubernetes runner stopped: %w", err)
		}
		cancelRuns()
		return err
	})
	return runCtx, adopted, nil
}
