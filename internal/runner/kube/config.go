package kube

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// Defaults applied by Config.withDefaults.
const (
	DefaultImagePullPolicy  = corev1.PullIfNotPresent
	DefaultTimeout          = time.Hour
	DefaultKillGrace        = 10 * time.Second
	DefaultStartupAllowance = 2 * time.Minute
	DefaultTTLAfterFinished = time.Hour
)

// DefaultResources are a run pod's requests and limits unless configured:
// Terraform plus one large provider (AWS, Kubernetes) peaks around 1 GiB.
var defaultResources = Resources{
	Requests: map[string]string{"cpu": "250m", "memory": "512Mi", "ephemeral-storage": "1Gi"},
	Limits:   map[string]string{"cpu": "2", "memory": "2Gi", "ephemeral-storage": "8Gi"},
}

// Config is the Kubernetes runner's configuration (runner.kubernetes.* in
// driftwatch's config, mapped by the app).
type Config struct {
	// Namespace holds the run Jobs, their pods and run Secrets. Required.
	Namespace string
	// Image is the run pods' image: driftwatch's own image. Required.
	Image           string
	ImagePullPolicy corev1.PullPolicy
	// ImagePullSecrets names Secrets in Namespace.
	ImagePullSecrets []string
	// Command starts driftwatch in the image (default ["driftwatch"], from
	// PATH); the pod's runner container runs Command + ["runner", "--spec",
	// SpecPath, "--socket", HandoffSocket], its reporter container Command +
	// ["runner", "report", "--spec", SpecPath, "--socket", HandoffSocket].
	Command []string
	// ServiceAccount is the run pods' ServiceAccount: one without RBAC
	// bindings (its token is not mounted anyway). Empty: the namespace's
	// "default".
	ServiceAccount string
	// CallbackURL is the daemon's base URL as reachable from run pods, e.g.
	// http://driftwatch.driftwatch.svc:8080. Required.
	CallbackURL string
	// CallbackCAFile is a PEM file, on the daemon, of the CA that signed
	// the daemon's serving certificate (an https CallbackURL with a
	// private CA). It is read for every run, so a rotated CA reaches the
	// next run, and its content goes into the run spec (remote.Spec's
	// CallbackCA): the pod then trusts the system roots plus this CA.
	// Empty: the system roots alone. It is not a secret.
	CallbackCAFile string
	// callbackCA is CallbackCAFile's content, as read for the run being
	// prepared (Runner.start reads it; prepare stays pure).
	callbackCA string
	// Resources are the default requests and limits of a run pod.
	Resources Resources
	// DefaultTimeout applies to runs whose request has none.
	DefaultTimeout time.Duration
	// StartupAllowance is added to a run's timeout (and kill grace) for its
	// activeDeadlineSeconds: image pull, scheduling, result delivery.
	StartupAllowance time.Duration
	// TTLAfterFinished is how long a finished Job (and its pod and Secret)
	// is kept for inspection.
	TTLAfterFinished time.Duration
	// CLIConfigFile is the Terraform CLI config file in the image or a
	// mounted volume (empty: the image's TF_CLI_CONFIG_FILE, if any).
	CLIConfigFile string
	// Workspaces holds per-workspace settings: credentials and resources.
	Workspaces map[string]Workspace
	// Events, when set, records a Kubernetes Event on the Job for each run
	// outcome (RBAC: create events).
	Events bool
}

// Workspace is the Kubernetes view of one workspace.
type Workspace struct {
	// SecretEnv maps an environment variable of the run to a key of an
	// existing Secret in Namespace. The key is mounted as a file (never an
	// env var of the pod) and the run reads it like a secret_env_files
	// entry. Every secret env name of the workspace must be mapped here.
	SecretEnv map[string]SecretKeyRef
	// GitCredentials is the key holding the git source's credentials, if
	// the source has any.
	GitCredentials *SecretKeyRef
	// Resources override Config.Resources key by key.
	Resources Resources
}

// SecretKeyRef names one key of a Secret.
type SecretKeyRef struct {
	Name, Key string
}

// Resources are Kubernetes quantities by resource name ("cpu", "memory",
// "ephemeral-storage").
type Resources struct {
	Requests map[string]string
	Limits   map[string]string
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

// withDefaults returns c with defaults filled in.
func (c Config) withDefaults() Config {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultImagePullPolicy
	}
	if len(c.Command) == 0 {
		c.Command = []string{"driftwatch"}
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.StartupAllowance <= 0 {
		c.StartupAllowance = DefaultStartupAllowance
	}
	if c.TTLAfterFinished <= 0 {
		c.TTLAfterFinished = DefaultTTLAfterFinished
	}
	c.Resources = defaultResources.merge(c.Resources)
	return c
}

// merge returns r with o's entries on top.
func (r Resources) merge(o Resources) Resources {
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

// requirements converts validated resources.
func (r Resources) requirements() corev1.ResourceRequirements {
	conv := func(m map[string]string) corev1.ResourceList {
		if len(m) == 0 {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: conv(r.Requests), Limits: conv(r.Limits)}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxCallbackCABytes bounds the callback CA file: a few certificates.
const maxCallbackCABytes = 1 << 20

// ReadCallbackCA reads and checks a callback CA file ("" is none): PEM
// certificates only, at most 1 MiB.
func ReadCallbackCA(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCallbackCABytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxCallbackCABytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxCallbackCABytes)
	}
	if _, err := remote.ParseCAs(b); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(b), nil
}
