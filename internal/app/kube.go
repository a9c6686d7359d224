package app

import (
	"errors"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/config"
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
