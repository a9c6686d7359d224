package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/remediation"
	"github.com/driftwatch/driftwatch/internal/run"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// kubeRuntime is the kubernetes runner mode's parts: the runner, the result
// Receiver, served with its proceed check by the callback server on a
// listener of its own (runner.kubernetes.callback_listen; never on the main
// server, whose API run pods must not reach), and the client (leader
// election).
type kubeRuntime struct {
	runner   *kube.Runner
	recv     *remote.Receiver
	callback *remote.CallbackServer
	listen   string // the callback server's address
	client   kubernetes.Interface
}

// newKubeRuntime builds the kubernetes mode's parts; proceed answers
// remediation pods' proceed checks (daemon.mayApply).
func newKubeRuntime(cfg *config.Config, log *slog.Logger, proceed remote.ProceedFunc) (*kubeRuntime, error) {
	k := cfg.Runner.Kubernetes
	if k == nil {
		return nil, errors.New("kubernetes runner: runner.kubernetes is required")
	}
	cs, err := kube.NewClient(k.Kubeconfig)
	if err != nil {
		return nil, err
	}
	recv := remote.NewReceiver(remote.ReceiverOptions{Logger: log, Proceed: proceed})
	r, err := kube.New(kube.Options{Client: cs, Receiver: recv, Config: kube.Config(k.Kube()), Logger: log})
	if err != nil {
		return nil, err
	}
	// The callback speaks TLS as the main server does, with its files.
	cb, err := remote.NewCallbackServer(remote.CallbackServerOptions{
		Receiver: recv, Logger: log, TLSCertFile: cfg.Server.TLSCertFile, TLSKeyFile: cfg.Server.TLSKeyFile,
	})
	if err != nil {
		return nil, err
	}
	return &kubeRuntime{runner: r, recv: recv, callback: cb, listen: k.CallbackListen, client: cs}, nil
}

// serveCallback serves the run pods' callback until ctx is done.
func (k *kubeRuntime) serveCallback(ctx context.Context) error {
	return k.callback.Run(ctx, k.listen)
}

// adopt starts the runner's Watch and adopts the Jobs a previous daemon
// left running, marking their workspaces busy (run.Manager.Adopting). It
// returns the context runs run under: cancelled once Watch has stopped,
// which happens (in g) when ctx ends (awaited runs then end with
// kube.ErrStopped and their Jobs keep running for the next daemon) or
// Watch fails. From then on runs.Stop: no run starts.
func (k *kubeRuntime) adopt(ctx context.Context, g *errgroup.Group, runs *run.Manager, rem *remediation.Controller) (context.Context, []run.Adopted, error) {
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	watchDone := make(chan error, 1)
	go func() { watchDone <- k.runner.Watch(watchCtx) }()
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	found, err := k.runner.Adopt(actx)
	cancel()
	if err != nil {
		stopWatch()
		<-watchDone //nolint:errcheck // stopped here: the caller returns its own error
		return nil, nil, fmt.Errorf("kubernetes runner: adopt running jobs: %w", err)
	}
	adopted := make([]run.Adopted, 0, len(found))
	for _, a := range found {
		adopted = append(adopted, run.Adopted{Workspace: a.Workspace, RunID: a.RunID, Job: a.Job, Remediation: a.Remediation,
			Runner: adoptedRunner{a: a, rem: rem, runner: k.runner}})
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

// adoptedRunner is a runner.Runner whose one run is an adopted Job: the
// auditor classifies its result like any other run's. An adopted
// remediation Job is awaited (never deleted: stopping an apply half way is
// worse than letting it end), its outcome recorded on its remediation, and
// the run is then a fresh detection Job: the verification that a local
// apply is followed by.
type adoptedRunner struct {
	a      *kube.Adopted
	rem    *remediation.Controller
	runner *kube.Runner
}

func (r adoptedRunner) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	if !r.a.Remediation {
		return r.a.Wait(ctx)
	}
	if err := r.a.AwaitRemediation(ctx, r.rem); err != nil {
		return runner.Result{}, err
	}
	return r.runner.Run(ctx, req)
}
