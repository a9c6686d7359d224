package kube

import (
	"context"
	"log/slog"

	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Isolation is how the kubernetes mode's runs are confined (the daemon's
// /api/v1/status): by their pod and the chart's NetworkPolicy, not by a
// jail of the daemon's.
func Isolation() sandbox.Isolation {
	return sandbox.Isolation{Mode: "none", Reason: "runs are Kubernetes Jobs: the pod is their sandbox",
		Network: "host", NetworkReason: "runs are Kubernetes Jobs: the chart's NetworkPolicy confines them"}
}

// ModeOptions configures the kubernetes runner mode (NewMode): the
// settings of runner.kubernetes and the server's TLS files, which app
// hands it.
type ModeOptions struct {
	// Kubeconfig is the kubeconfig file ("": in-cluster).
	Kubeconfig string
	// QPS and Burst limit the client's requests (NewClient).
	QPS   float32
	Burst int
	// CallbackListen is the callback server's address.
	CallbackListen string
	// Config is the Jobs' settings.
	Config Config
	// TLSCertFile and TLSKeyFile are the main server's: the callback
	// speaks TLS as it does, with its files.
	TLSCertFile, TLSKeyFile string
	// Proceed answers remediation pods' proceed checks.
	Proceed remote.ProceedFunc
	Logger  *slog.Logger
}

// Mode is the kubernetes runner mode's parts: the Runner, the result
// Receiver, served with its proceed check by the callback server on a
// listener of its own (never on the main server, whose API run pods must
// not reach), and the client (leader election).
type Mode struct {
	Runner   *Runner
	Receiver *remote.Receiver
	Client   kubernetes.Interface
	Callback *remote.CallbackServer
	// Listen is the callback server's address.
	Listen string
}

// NewMode builds the kubernetes mode's parts; it opens no connection.
func NewMode(o ModeOptions) (*Mode, error) {
	cs, err := NewClient(o.Kubeconfig, o.QPS, o.Burst)
	if err != nil {
		return nil, err
	}
	recv := remote.NewReceiver(remote.ReceiverOptions{Logger: o.Logger, Proceed: o.Proceed})
	r, err := New(Options{Client: cs, Receiver: recv, Config: o.Config, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	cb, err := remote.NewCallbackServer(remote.CallbackServerOptions{
		Receiver: recv, Logger: o.Logger, TLSCertFile: o.TLSCertFile, TLSKeyFile: o.TLSKeyFile,
	})
	if err != nil {
		return nil, err
	}
	return &Mode{Runner: r, Receiver: recv, Client: cs, Callback: cb, Listen: o.CallbackListen}, nil
}

// ServeCallback serves the run pods' callback until ctx is done.
func (m *Mode) ServeCallback(ctx context.Context) error {
	return m.Callback.Run(ctx, m.Listen)
}

// NoAccept is why a daemon in this mode runs no acceptance of drift as
// code: those run Terraform in the daemon's process, and here Terraform
// runs in Jobs. "" for a nil Mode (the local runner).
func (m *Mode) NoAccept() string {
	if m == nil {
		return ""
	}
	return "accepting drift as code runs Terraform in the daemon, and with runner.mode kubernetes Terraform runs only in Jobs: run `driftwatch accept WORKSPACE` from CI or a workstation with the same config"
}
