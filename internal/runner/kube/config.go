package kube

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driftwatch/driftwatch/internal/config/kubecfg"
	"github.com/driftwatch/driftwatch/internal/tlsfiles/cafile"
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

// Config is the Kubernetes runner's configuration: kubecfg.Config (the
// runner.kubernetes block config embeds, with its fields' documentation),
// as a defined type so the runner adds its defaults (withDefaults). The
// app passes config's block as kube.Config(cfg.Runner.Kubernetes.Kube()).
type Config kubecfg.Config

// Workspace is the Kubernetes view of one workspace (kubecfg.Workspace).
type Workspace = kubecfg.Workspace

// SecretKeyRef names one key of a Secret (kubecfg.SecretKeyRef).
type SecretKeyRef = kubecfg.SecretKeyRef

// Resources are Kubernetes quantities by resource name ("cpu", "memory",
// "ephemeral-storage") (kubecfg.Resources).
type Resources = kubecfg.Resources

// Validate checks the configuration; errors name the config key
// (kubecfg.Config.Validate, which config validation runs too).
func (c Config) Validate() error { return kubecfg.Config(c).Validate() }

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
	c.Resources = defaultResources.Merge(c.Resources)
	return c
}

// requirements converts validated resources.
func requirements(r Resources) corev1.ResourceRequirements {
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

// ReadCallbackCA reads and checks a callback CA file ("" is none): PEM
// certificates only, at most 1 MiB (cafile.Read, which config validation
// runs too).
func ReadCallbackCA(path string) (string, error) { return cafile.Read(path) }
