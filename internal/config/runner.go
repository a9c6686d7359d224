package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/config/kubecfg"
	"github.com/driftwatch/driftwatch/internal/tlsfiles/cafile"
)

// Runner modes.
const (
	RunnerModeLocal      = "local"
	RunnerModeKubernetes = "kubernetes"
)

// Runner is the `runner:` block: where runs execute.
type Runner struct {
	// Mode is local (default: Terraform runs as a child process of the
	// daemon) or kubernetes (each run is a sandboxed Job).
	Mode       string            `yaml:"mode"`
	Kubernetes *RunnerKubernetes `yaml:"kubernetes"`
	// LeaderElection is read in kubernetes mode only.
	LeaderElection LeaderElection `yaml:"leader_election"`
}

// LeaderElection configures the Lease that lets only one daemon schedule.
type LeaderElection struct {
	Enabled   bool   `yaml:"enabled"`
	LeaseName string `yaml:"lease_name"`
	// Namespace of the Lease (default runner.kubernetes.namespace).
	Namespace string `yaml:"namespace"`
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (defaults 15s, 10s, 2s): a standby takes over at most about
	// LeaseDuration after the leader died.
	LeaseDuration Duration `yaml:"lease_duration"`
	RenewDeadline Duration `yaml:"renew_deadline"`
	RetryPeriod   Duration `yaml:"retry_period"`
}

// Leader election defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Timings returns lease duration, renew deadline and retry period, defaulted.
func (l LeaderElection) Timings() (lease, renew, retry time.Duration) {
	lease, renew, retry = DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod
	if l.LeaseDuration > 0 {
		lease = time.Duration(l.LeaseDuration)
	}
	if l.RenewDeadline > 0 {
		renew = time.Duration(l.RenewDeadline)
	}
	if l.RetryPeriod > 0 {
		retry = time.Duration(l.RetryPeriod)
	}
	return lease, renew, retry
}

// RunnerKubernetes is `runner.kubernetes:`: where the daemon finds the
// cluster, and the Kubernetes runner's own settings (kubecfg.Config, keys
// and checks included), which kube.Config is a defined type over.
type RunnerKubernetes struct {
	// Kubeconfig is a kubeconfig file (out-of-cluster, tests); empty: the
	// in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// CallbackListen is the address of the run pods' callback listener
	// (default DefaultCallbackListen): the result and proceed routes, and
	// nothing else, on a port of their own, so that a NetworkPolicy can let
	// run pods, which execute workspaces' code, reach that port and not the
	// API, status page or metrics of server.listen. It speaks HTTPS with
	// server.tls_cert_file, as the main server does. callback_url names it
	// as run pods reach it (a Service port in front of it, say).
	CallbackListen string `yaml:"callback_listen"`
	// APIQPS and APIBurst limit the daemon's requests to the Kubernetes
	// API (default DefaultAPIQPS and DefaultAPIBurst): every run costs a
	// few (its Job and Secret), and a client left at client-go's 5 a
	// second caps a fleet at a few thousand checks an hour.
	APIQPS         float32 `yaml:"api_qps"`
	APIBurst       int     `yaml:"api_burst"`
	kubecfg.Config `yaml:",inline"`
}

// Defaults of runner.kubernetes.api_qps and api_burst.
const (
	DefaultAPIQPS   = 50
	DefaultAPIBurst = 100
)

// DefaultCallbackListen is runner.kubernetes.callback_listen's default:
// every interface, since run pods reach it from outside the daemon's pod.
const DefaultCallbackListen = ":8081"

// Kube returns the Kubernetes runner's configuration (the zero Config when
// k is nil); the app hands it to kube.New as kube.Config(k.Kube()).
func (k *RunnerKubernetes) Kube() kubecfg.Config {
	if k == nil {
		return kubecfg.Config{}
	}
	return k.Config
}

// EffectiveMode is Mode, defaulted: RunnerModeKubernetes or
// RunnerModeLocal.
func (r Runner) EffectiveMode() string {
	if r.Mode == RunnerModeKubernetes {
		return RunnerModeKubernetes
	}
	return RunnerModeLocal
}

// CallbackURL is runner.kubernetes.callback_url in kubernetes mode, else
// "": the URL run pods deliver their results to, whose host names the
// daemon (its Service, say), an allowed Host of the main server too.
func (r Runner) CallbackURL() string {
	if r.Mode != RunnerModeKubernetes {
		return ""
	}
	return r.Kubernetes.Kube().CallbackURL
}

// LeaseNamespace is the Lease's namespace.
func (r Runner) LeaseNamespace() string {
	if r.LeaderElection.Namespace != "" {
		return r.LeaderElection.Namespace
	}
	if r.Kubernetes != nil {
		return r.Kubernetes.Namespace
	}
	return ""
}

func (c *Config) validateRunner(pos *positions) []error {
	var errs []error
	r := c.Runner
	switch r.Mode {
	case "", RunnerModeLocal:
		if r.LeaderElection.Enabled {
			return []error{pos.errorf("runner.leader_election.enabled", "leader election needs runner.mode kubernetes")}
		}
		return nil
	case RunnerModeKubernetes:
	default:
		return []error{pos.errorf("runner.mode", "unknown mode %q (use local or kubernetes)", r.Mode)}
	}
	if r.Kubernetes == nil {
		return []error{pos.errorf("runner.kubernetes", "required when runner.mode is kubernetes")}
	}
	if r.Kubernetes.Kubeconfig != "" {
		r.Kubernetes.Kubeconfig = absFrom(filepath.Dir(c.File), r.Kubernetes.Kubeconfig)
	}
	if r.Kubernetes.CallbackListen == "" {
		r.Kubernetes.CallbackListen = DefaultCallbackListen
	}
	if err := checkCallbackListen(r.Kubernetes.CallbackListen, c.Server.Listen); err != nil {
		errs = append(errs, pos.errorf("runner.kubernetes.callback_listen", "%v", err))
	}
	switch k := r.Kubernetes; {
	case k.APIQPS < 0:
		errs = append(errs, pos.errorf("runner.kubernetes.api_qps", "must not be negative, got %g", k.APIQPS))
	case k.APIQPS == 0:
		k.APIQPS = DefaultAPIQPS
	}
	switch k := r.Kubernetes; {
	case k.APIBurst < 0:
		errs = append(errs, pos.errorf("runner.kubernetes.api_burst", "must not be negative, got %d", k.APIBurst))
	case k.APIBurst == 0:
		k.APIBurst = max(DefaultAPIBurst, int(k.APIQPS))
	case float32(k.APIBurst) < k.APIQPS:
		errs = append(errs, pos.errorf("runner.kubernetes.api_burst", "must be at least api_qps (%g), got %d", k.APIQPS, k.APIBurst))
	}
	r.Kubernetes.CallbackCAFile = absFrom(filepath.Dir(c.File), r.Kubernetes.CallbackCAFile)
	if f := r.Kubernetes.CallbackCAFile; f != "" {
		if _, err := cafile.Read(f); err != nil {
			errs = append(errs, pos.errorf("runner.kubernetes.callback_ca_file", "%v", err))
		}
	}
	if err := r.Kubernetes.Config.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			// Lines start with the key: "namespace is required",
			// "workspaces.a.secret_env.X: ...".
			k := line
			if i := strings.IndexAny(line, ": "); i > 0 {
				k = line[:i]
			}
			msg := strings.TrimLeft(line[len(k):], ": ")
			errs = append(errs, pos.errorf("runner.kubernetes."+k, "%s", msg))
		}
	}
	for ws := range r.Kubernetes.Workspaces {
		found := false
		for _, w := range c.Workspaces {
			found = found || w.Name == ws
		}
		if !found {
			errs = append(errs, pos.errorf("runner.kubernetes.workspaces."+ws, "no workspace %q is configured", ws))
		}
	}
	if le := r.LeaderElection; le.Enabled {
		if le.LeaseName == "" {
			errs = append(errs, pos.errorf("runner.leader_election.lease_name", "required when leader election is enabled"))
		}
		lease, renew, retry := le.Timings()
		if renew >= lease {
			errs = append(errs, pos.errorf("runner.leader_election.renew_deadline", "must be shorter than lease_duration (%s)", lease))
		}
		if float64(renew) <= 1.2*float64(retry) {
			errs = append(errs, pos.errorf("runner.leader_election.retry_period", "must be shorter than renew_deadline / 1.2"))
		}
	}
	return errs
}

// checkCallbackListen checks the callback listener's address: host:port,
// on another port than the main server's (listen), which run pods must not
// reach.
func checkCallbackListen(addr, listen string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q: port %q must be a number from 1 to 65535", addr, port)
	}
	if _, p, err := net.SplitHostPort(listen); err == nil && p == port {
		return fmt.Errorf("%q must use another port than server.listen (%q): run pods may reach the callback port only", addr, listen)
	}
	return nil
}
