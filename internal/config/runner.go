package config

import (
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
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

// RunnerKubernetes is `runner.kubernetes:`, mapped onto kube.Config.
type RunnerKubernetes struct {
	// Kubeconfig is a kubeconfig file (out-of-cluster, tests); empty: the
	// in-cluster service account.
	Kubeconfig       string   `yaml:"kubeconfig"`
	Namespace        string   `yaml:"namespace"`
	Image            string   `yaml:"image"`
	ImagePullPolicy  string   `yaml:"image_pull_policy"`
	ImagePullSecrets []string `yaml:"image_pull_secrets"`
	Command          []string `yaml:"command"`
	ServiceAccount   string   `yaml:"service_account"`
	CallbackURL      string   `yaml:"callback_url"`
	// CallbackCAFile is a PEM file of the CA that signed the daemon's
	// certificate (server.tls_cert_file), for an https callback_url: run
	// pods trust the system roots plus this CA. Relative to the config file.
	CallbackCAFile   string                   `yaml:"callback_ca_file"`
	Resources        KubeResources            `yaml:"resources"`
	DefaultTimeout   Duration                 `yaml:"default_timeout"`
	StartupAllowance Duration                 `yaml:"startup_allowance"`
	TTLAfterFinished Duration                 `yaml:"ttl_after_finished"`
	CLIConfigFile    string                   `yaml:"cli_config_file"`
	Events           bool                     `yaml:"events"`
	Workspaces       map[string]KubeWorkspace `yaml:"workspaces"`
}

// KubeResources are requests and limits by resource name.
type KubeResources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

// KubeWorkspace is runner.kubernetes.workspaces.<name>.
type KubeWorkspace struct {
	SecretEnv      map[string]SecretKeyRef `yaml:"secret_env"`
	GitCredentials *SecretKeyRef           `yaml:"git_credentials"`
	Resources      KubeResources           `yaml:"resources"`
}

// SecretKeyRef names one key of a Secret.
type SecretKeyRef struct {
	Secret string `yaml:"secret"`
	Key    string `yaml:"key"`
}

// Kube returns the Kubernetes runner's configuration.
func (k *RunnerKubernetes) Kube() kube.Config {
	if k == nil {
		return kube.Config{}
	}
	c := kube.Config{
		Namespace:        k.Namespace,
		Image:            k.Image,
		ImagePullPolicy:  corev1.PullPolicy(k.ImagePullPolicy),
		ImagePullSecrets: k.ImagePullSecrets,
		Command:          k.Command,
		ServiceAccount:   k.ServiceAccount,
		CallbackURL:      k.CallbackURL,
		CallbackCAFile:   k.CallbackCAFile,
		Resources:        kube.Resources{Requests: k.Resources.Requests, Limits: k.Resources.Limits},
		DefaultTimeout:   time.Duration(k.DefaultTimeout),
		StartupAllowance: time.Duration(k.StartupAllowance),
		TTLAfterFinished: time.Duration(k.TTLAfterFinished),
		CLIConfigFile:    k.CLIConfigFile,
		Events:           k.Events,
	}
	if len(k.Workspaces) > 0 {
		c.Workspaces = map[string]kube.Workspace{}
		for name, w := range k.Workspaces {
			kw := kube.Workspace{Resources: kube.Resources{Requests: w.Resources.Requests, Limits: w.Resources.Limits}}
			if len(w.SecretEnv) > 0 {
				kw.SecretEnv = map[string]kube.SecretKeyRef{}
				for env, r := range w.SecretEnv {
					kw.SecretEnv[env] = kube.SecretKeyRef{Name: r.Secret, Key: r.Key}
				}
			}
			if w.GitCredentials != nil {
				kw.GitCredentials = &kube.SecretKeyRef{Name: w.GitCredentials.Secret, Key: w.GitCredentials.Key}
			}
			c.Workspaces[name] = kw
		}
	}
	return c
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
	r.Kubernetes.CallbackCAFile = absFrom(filepath.Dir(c.File), r.Kubernetes.CallbackCAFile)
	if f := r.Kubernetes.CallbackCAFile; f != "" {
		if _, err := kube.ReadCallbackCA(f); err != nil {
			errs = append(errs, pos.errorf("runner.kubernetes.callback_ca_file", "%v", err))
		}
	}
	if err := r.Kubernetes.Kube().Validate(); err != nil {
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
