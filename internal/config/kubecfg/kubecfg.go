// Package kubecfg is the Kubernetes runner's configuration: Config (the
// `runner.kubernetes:` block, keys and all), its per-workspace settings and
// Validate. config embeds Config as is, and kube.Config is a defined type
// over it (kube adds its defaults), so the settings are declared and
// checked once, with no copy between a config type and a runner type. It
// is a leaf: it imports no other internal package. It lives under config,
// not beside runner/kube: config imports leaves of folders below it only,
// and the runner's folder stands above config (its Jobs run the
// remediation engine).
package kubecfg

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Config is the Kubernetes runner's configuration (runner.kubernetes.* in
// driftwatch's config).
type Config struct {
	// Namespace holds the run Jobs, their pods and run Secrets. Required.
	Namespace string `yaml:"namespace"`
	// Image is the run pods' image: driftwatch's own image. Required.
	Image           string            `yaml:"image"`
	ImagePullPolicy corev1.PullPolicy `yaml:"image_pull_policy"`
	// ImagePullSecrets names Secrets in Namespace.
	ImagePullSecrets []string `yaml:"image_pull_secrets"`
	// Command starts driftwatch in the image (default ["driftwatch"], from
	// PATH); the pod's runner container runs Command + ["runner", "--spec",
	// SpecPath, "--socket", HandoffSocket], its reporter container Command +
	// ["runner", "report", "--spec", SpecPath, "--socket", HandoffSocket].
	Command []string `yaml:"command"`
	// ServiceAccount is the run pods' ServiceAccount: one without RBAC
	// bindings (its token is not mounted anyway). Empty: the namespace's
	// "default".
	ServiceAccount string `yaml:"service_account"`
	// CallbackURL is the daemon's base URL as reachable from run pods, e.g.
	// http://driftwatch.driftwatch.svc:8080. Required.
	CallbackURL string `yaml:"callback_url"`
	// CallbackCAFile is a PEM file, on the daemon, of the CA that signed
	// the daemon's serving certificate (server.tls_cert_file; an https
	// CallbackURL with a private CA), relative to the config file. It is
	// read for every run, so a rotated CA reaches the next run, and its
	// content goes into the run spec (remote.Spec's CallbackCA): the pod
	// then trusts the system roots plus this CA. Empty: the system roots
	// alone. It is not a secret.
	CallbackCAFile string `yaml:"callback_ca_file"`
	// CallbackCA is CallbackCAFile's content, as read for the run being
	// prepared: the runner sets it (its start reads the file; prepare
	// stays pure). It is never configured.
	CallbackCA string `yaml:"-"`
	// Resources are the default requests and limits of a run pod.
	Resources Resources `yaml:"resources"`
	// DefaultTimeout applies to runs whose request has none.
	DefaultTimeout time.Duration `yaml:"default_timeout"`
	// StartupAllowance is added to a run's timeout (and kill grace) for its
	// activeDeadlineSeconds: image pull, scheduling, result delivery.
	StartupAllowance time.Duration `yaml:"startup_allowance"`
	// TTLAfterFinished is how long a finished Job (and its pod and Secret)
	// is kept for inspection.
	TTLAfterFinished time.Duration `yaml:"ttl_after_finished"`
	// CLIConfigFile is the Terraform CLI config file in the image or a
	// mounted volume (empty: the image's TF_CLI_CONFIG_FILE, if any).
	CLIConfigFile string `yaml:"cli_config_file"`
	// Events, when set, records a Kubernetes Event on the Job for each run
	// outcome (RBAC: create events).
	Events bool `yaml:"events"`
	// Workspaces holds per-workspace settings: credentials and resources.
	Workspaces map[string]Workspace `yaml:"workspaces"`
}

// Workspace is the Kubernetes view of one workspace
// (runner.kubernetes.workspaces.<name>).
type Workspace struct {
	// SecretEnv maps an environment variable of the run to a key of an
	// existing Secret in Namespace. The key is mounted as a file (never an
	// env var of the pod) and the run reads it like a secret_env_files
	// entry. Every secret env name of the workspace must be mapped here.
	SecretEnv map[string]SecretKeyRef `yaml:"secret_env"`
	// GitCredentials is the key holding the git source's credentials, if
	// the source has any.
	GitCredentials *SecretKeyRef `yaml:"git_credentials"`
	// Resources override Config.Resources key by key.
	Resources Resources `yaml:"resources"`
}

// SecretKeyRef names one key of a Secret (`secret` and `key` in the
// config).
type SecretKeyRef struct {
	Name string `yaml:"secret"`
	Key  string `yaml:"key"`
}

// Resources are Kubernetes quantities by resource name ("cpu", "memory",
// "ephemeral-storage").
type Resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the configuration; errors name the config key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Namespace == "" {
		add("namespace is required")
	} else if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		add("namespace %q: %s", c.Namespace, msgs[0])
	}
	if c.Image == "" {
		add("image is required")
	}
	switch c.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		add("image_pull_policy %q must be Always, IfNotPresent or Never", c.ImagePullPolicy)
	}
	if c.ServiceAccount != "" {
		if msgs := validation.IsDNS1123Subdomain(c.ServiceAccount); len(msgs) > 0 {
			add("service_account %q: %s", c.ServiceAccount, msgs[0])
		}
	}
	if c.CallbackURL == "" {
		add("callback_url is required")
	} else if u, err := url.Parse(c.CallbackURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("callback_url %q must be an absolute http(s) URL", c.CallbackURL)
	} else if c.CallbackCAFile != "" && u.Scheme != "https" {
		add("callback_ca_file is set but callback_url %q is not https: a CA only verifies an https callback", c.CallbackURL)
	}
	for name, d := range map[string]time.Duration{
		"default_timeout": c.DefaultTimeout, "startup_allowance": c.StartupAllowance, "ttl_after_finished": c.TTLAfterFinished,
	} {
		if d < 0 {
			add("%s must not be negative", name)
		}
	}
	if err := c.Resources.validate("resources"); err != nil {
		errs = append(errs, err)
	}
	for _, ws := range sortedKeys(c.Workspaces) {
		w := c.Workspaces[ws]
		for _, env := range sortedKeys(w.SecretEnv) {
			if !envNameRE.MatchString(env) {
				add("workspaces.%s.secret_env: %q is not an environment variable name", ws, env)
			}
			if err := w.SecretEnv[env].validate(); err != nil {
				add("workspaces.%s.secret_env.%s: %w", ws, env, err)
			}
		}
		if w.GitCredentials != nil {
			if err := w.GitCredentials.validate(); err != nil {
				add("workspaces.%s.git_credentials: %w", ws, err)
			}
		}
		if err := w.Resources.validate("workspaces." + ws + ".resources"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r SecretKeyRef) validate() error {
	if msgs := validation.IsDNS1123Subdomain(r.Name); len(msgs) > 0 {
		return fmt.Errorf("secret name %q: %s", r.Name, msgs[0])
	}
	if msgs := validation.IsConfigMapKey(r.Key); len(msgs) > 0 {
		return fmt.Errorf("secret key %q: %s", r.Key, msgs[0])
	}
	return nil
}

func (r Resources) validate(key string) error {
	var errs []error
	for kind, m := range map[string]map[string]string{"requests": r.Requests, "limits": r.Limits} {
		for _, name := range sortedKeys(m) {
			if _, err := resource.ParseQuantity(m[name]); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s.%s: %q: %w", key, kind, name, m[name], err))
			}
		}
	}
	return errors.Join(errs...)
}

// Merge returns r with o's entries on top.
func (r Resources) Merge(o Resources) Resources {
	cp := func(a, b map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out
	}
	return Resources{Requests: cp(r.Requests, o.Requests), Limits: cp(r.Limits, o.Limits)}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
