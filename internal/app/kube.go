package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// kubeRuntime is the kubernetes runner mode's parts: the runner, the result
// Receiver (mounted on remote.Route, its proceed check on
// remote.ProceedRoute: handlers) and the client (leader election).
type kubeRuntime struct {
	runner *kube.Runner
	recv   *remote.Receiver
	client kubernetes.Interface
}

// kubeClient connects to the cluster: the kubeconfig file if set, else the
// in-cluster service account.
func kubeClient(path string) (kubernetes.Interface, error) {
	var rc *rest.Config
	var err error
	if path != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes runner: client config: %w", err)
	}
	rc.UserAgent = "driftwatch"
	return kubernetes.NewForConfig(rc)
}

// newKubeRuntime builds the kubernetes mode's parts; proceed answers
// remediation pods' proceed checks (daemon.mayApply).
func newKubeRuntime(cfg *config.Config, log *slog.Logger, proceed remote.ProceedFunc) (*kubeRuntime, error) {
	k := cfg.Runner.Kubernetes
	if k == nil {
		return nil, errors.New("kubernetes runner: runner.kubernetes is required")
	}
	cs, err := kubeClient(k.Kubeconfig)
	if err != nil {
		return nil, err
	}
	recv := remote.NewReceiver(remote.ReceiverOptions{Logger: log, Proceed: proceed})
	r, err := kube.New(kube.Options{Client: cs, Receiver: recv, Config: k.Kube(), Logger: log})
	if err != nil {
		return nil, err
	}
	return &kubeRuntime{runner: r, recv: recv, client: cs}, nil
}

// adoptedRunner is a runner.Runner whose one run is an adopted Job: the
// auditor classifies its result like any other run's. An adopted
// remediation Job is awaited (never deleted: stopping an apply half way is
// worse than letting it end), its outcome recorded on its remediation, and
// the run is then a fresh detection Job: the verification that a local
// apply is followed by.
type adoptedRunner struct {
	a *kube.Adopted
	d *daemon
}

func (r adoptedRunner) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	if !r.a.Remediation {
		return r.a.Wait(ctx)
	}
	if err := r.d.rem.AwaitAdopted(ctx, r.a); err != nil {
		return runner.Result{}, err
	}
	return r.d.kube.runner.Run(ctx, req)
}

// handlers are the routes run pods call, authenticated with their per-run
// token, not the API token.
func (k *kubeRuntime) handlers() map[string]http.Handler {
	return map[string]http.Handler{remote.Route: k.recv, remote.ProceedRoute: k.recv.ProceedHandler()}
}
