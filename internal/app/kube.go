package app

import (
	"context"
	"errors"
	"log/slog"

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

// kubeJobs is the kubernetes runner as the run lifecycle's Lead sees it
// (run.Jobs): an adopted Job's run is joined to the remediation
// controller, which records an adopted apply's outcome.
type kubeJobs struct {
	r   *kube.Runner
	rem *remediation.Controller
}

func (k kubeJobs) Watch(ctx context.Context) error { return k.r.Watch(ctx) }

func (k kubeJobs) Adopt(ctx context.Context) ([]run.Adopted, error) {
	found, err := k.r.Adopt(ctx)
	adopted := make([]run.Adopted, 0, len(found))
	for _, a := range found {
		adopted = append(adopted, run.Adopted{Workspace: a.Workspace, RunID: a.RunID, Job: a.Job, Remediation: a.Remediation,
			Runner: a.Runner(k.rem, k.r)})
	}
	return adopted, err
}
