//go:build linux

package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/driftwatch/driftwatch/internal/config"
)

const (
	chartRelease   = "driftwatch"
	chartNamespace = "driftwatch"
	ciRunNamespace = "driftwatch-runs" // runner.namespace in ci/ci-values.yaml
)

// chartDir is charts/driftwatch, from this package's directory.
func chartDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "..", "charts", "driftwatch"))
	require.NoError(t, err)
	return d
}

func ciValues(t *testing.T) string { return filepath.Join(chartDir(t), "ci", "ci-values.yaml") }

// helm runs the provisioned helm with a private HOME and helm directories.
func helm(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	bin := filepath.Join(BinDir(t), "helm")
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errors.New("helm " + strings.Join(args, " ") + ": " + err.Error() + "\n" + errOut.String() + out.String())
	}
	return out.String(), nil
}

// template renders the chart as release "driftwatch" in namespace
// "driftwatch" with extra helm arguments (-f, --set).
func template(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return helm(t, append([]string{"template", chartRelease, chartDir(t), "--namespace", chartNamespace}, args...)...)
}

// manifests is a rendered chart: every document, typed where client-go's
// scheme knows the kind, keyed "Kind/namespace/name".
type manifests map[string]runtime.Object

func mustTemplate(t *testing.T, args ...string) (string, manifests) {
	t.Helper()
	out, err := template(t, args...)
	require.NoError(t, err)
	m := manifests{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		j, err := utilyaml.ToJSON(doc)
		require.NoError(t, err)
		if string(bytes.TrimSpace(j)) == "null" {
			continue // empty document
		}
		require.NoError(t, json.Unmarshal(j, &meta))
		key := meta.Kind + "/" + meta.Metadata.Namespace + "/" + meta.Metadata.Name
		require.NotContains(t, m, key, "rendered twice")
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			obj = &runtime.Unknown{Raw: j}
		} else {
			require.NoError(t, err, "decode %s", key)
		}
		m[key] = obj
	}
	return out, m
}

func get[T runtime.Object](t *testing.T, m manifests, key string) T {
	t.Helper()
	obj, ok := m[key]
	require.True(t, ok, "%s not rendered; have %v", key, keys(m))
	v, ok := obj.(T)
	require.True(t, ok, "%s is a %T", key, obj)
	return v
}

func keys(m manifests) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestChartLint(t *testing.T) {
	for name, args := range map[string][]string{
		"default": nil,
		"ci":      {"-f", ciValues(t)},
		"tofu":    {"--set", "image.tool=tofu"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir(t), "--namespace", chartNamespace}, args...)...)
			require.NoError(t, err)
			assert.Contains(t, out, "0 chart(s) failed")
		})
	}
}

// TestChartDefaults checks what the default values render: the sandbox of
// the daemon pod, the single replica, the config driftwatch will load.
func TestChartDefaults(t *testing.T) {
	_, m := mustTemplate(t)
	assert.ElementsMatch(t, []string{
		"ConfigMap/driftwatch/driftwatch",
		"Deployment/driftwatch/driftwatch",
		"NetworkPolicy/driftwatch/driftwatch",
		"NetworkPolicy/driftwatch/driftwatch-runs",
		"PersistentVolumeClaim/driftwatch/driftwatch",
		"Role/driftwatch/driftwatch",
		"RoleBinding/driftwatch/driftwatch",
		"Service/driftwatch/driftwatch",
		"ServiceAccount/driftwatch/driftwatch",
		"ServiceAccount/driftwatch/driftwatch-run",
	}, keys(m))

	// On by default: the daemon admits run pods on port callback only, and
	// its namespace's other pods and the monitoring namespace on port http;
	// run pods admit nothing and may not reach the cloud metadata
	// endpoints. (TestChartCallbackPort evaluates them as stored by the
	// API server.)
	np := get[*networkingv1.NetworkPolicy](t, m, "NetworkPolicy/driftwatch/driftwatch")
	require.Len(t, np.Spec.Ingress, 2)
	rules := map[string][]string{}
	for _, r := range np.Spec.Ingress {
		require.Len(t, r.Ports, 1)
		for _, p := range r.From {
			b, _ := json.Marshal(p)
			rules[r.Ports[0].Port.String()] = append(rules[r.Ports[0].Port.String()], string(b))
		}
	}
	assert.Equal(t, []string{`{"podSelector":{"matchLabels":{"app.kubernetes.io/managed-by":"driftwatch"}},"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"driftwatch"}}}`},
		rules["callback"])
	assert.Contains(t, rules["http"], `{"podSelector":{"matchExpressions":[{"key":"app.kubernetes.io/managed-by","operator":"NotIn","values":["driftwatch"]}]}}`)
	assert.Contains(t, rules["http"], `{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}`)
	runs := get[*networkingv1.NetworkPolicy](t, m, "NetworkPolicy/driftwatch/driftwatch-runs")
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "driftwatch"}, runs.Spec.PodSelector.MatchLabels)
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, runs.Spec.PolicyTypes)
	assert.Empty(t, runs.Spec.Ingress)
	var excepted []string
	for _, e := range runs.Spec.Egress {
		for _, p := range e.To {
			if p.IPBlock != nil {
				excepted = append(excepted, p.IPBlock.Except...)
			}
		}
	}
	assert.ElementsMatch(t, []string{"169.254.169.254/32", "fd00:ec2::254/128"}, excepted)
	_, m3 := mustTemplate(t, "--set", "networkPolicy.runs.allowCloudMetadata=true")
	open := get[*networkingv1.NetworkPolicy](t, m3, "NetworkPolicy/driftwatch/driftwatch-runs")
	assert.Equal(t, []networkingv1.NetworkPolicyEgressRule{{}}, open.Spec.Egress)

	d := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch")
	require.NotNil(t, d.Spec.Replicas)
	assert.EqualValues(t, 1, *d.Spec.Replicas)
	assert.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type)
	pod := d.Spec.Template.Spec
	assert.Equal(t, "driftwatch", pod.ServiceAccountName)
	require.NotNil(t, pod.TerminationGracePeriodSeconds)
	assert.EqualValues(t, 60, *pod.TerminationGracePeriodSeconds)
	assert.NotEmpty(t, d.Spec.Template.Annotations["checksum/config"])

	psc := pod.SecurityContext
	require.NotNil(t, psc)
	assert.Equal(t, ptrTo(true), psc.RunAsNonRoot)
	assert.Equal(t, ptrTo[int64](65532), psc.RunAsUser)
	require.NotNil(t, psc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)

	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, "ghcr.io/driftwatch/driftwatch:"+chartAppVersion(t), c.Image)
	assert.Equal(t, []string{"daemon", "--config", "/etc/driftwatch/driftwatch.yaml", "--log-level", "info", "--log-format", "json"}, c.Args)
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.Equal(t, ptrTo(false), sc.AllowPrivilegeEscalation)
	assert.Equal(t, ptrTo(true), sc.ReadOnlyRootFilesystem)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Nil(t, sc.Privileged)

	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.LivenessProbe.HTTPGet)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Len(t, c.Ports, 2)
	assert.Equal(t, "http", c.Ports[0].Name)
	assert.EqualValues(t, 8080, c.Ports[0].ContainerPort)
	assert.Equal(t, "callback", c.Ports[1].Name)
	assert.EqualValues(t, 8081, c.Ports[1].ContainerPort)

	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	require.Contains(t, mounts, "/tmp")
	require.NotNil(t, vols[mounts["/tmp"].Name].EmptyDir, "/tmp is an emptyDir")
	require.Contains(t, mounts, "/var/lib/driftwatch")
	data := vols[mounts["/var/lib/driftwatch"].Name]
	require.NotNil(t, data.PersistentVolumeClaim)
	assert.Equal(t, "driftwatch", data.PersistentVolumeClaim.ClaimName)
	require.Contains(t, mounts, "/etc/driftwatch")
	assert.True(t, mounts["/etc/driftwatch"].ReadOnly)
	for _, vm := range c.VolumeMounts {
		assert.NotContains(t, vm.MountPath, "/var/run/secrets/driftwatch", "no secrets configured")
	}

	// The run pods' ServiceAccount never gets a token.
	runSA := get[*corev1.ServiceAccount](t, m, "ServiceAccount/driftwatch/driftwatch-run")
	assert.Equal(t, ptrTo(false), runSA.AutomountServiceAccountToken)

	// The config is one driftwatch's strict loader accepts, listening on all
	// interfaces, with the database on the data volume.
	cm := get[*corev1.ConfigMap](t, m, "ConfigMap/driftwatch/driftwatch")
	cfg, err := config.Load("/etc/driftwatch/driftwatch.yaml", []byte(cm.Data["driftwatch.yaml"]))
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:8080", cfg.Server.Listen)
	assert.True(t, strings.HasPrefix(cfg.Store.Path, "/var/lib/driftwatch/"), cfg.Store.Path)
	assert.Less(t, time.Duration(cfg.Terraform.KillGrace), time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second)
	assert.Equal(t, config.RunnerModeKubernetes, cfg.Runner.Mode, "the chart runs every plan as a Job")
	if assert.NotNil(t, cfg.Runner.Kubernetes) {
		assert.Equal(t, chartNamespace, cfg.Runner.Kubernetes.Namespace)
		assert.Equal(t, "driftwatch-run", cfg.Runner.Kubernetes.ServiceAccount)
		assert.Equal(t, "http://driftwatch.driftwatch.svc:8081", cfg.Runner.Kubernetes.CallbackURL, "the Service's callback port")
		assert.Equal(t, ":8081", cfg.Runner.Kubernetes.CallbackListen)
		assert.Empty(t, cfg.Runner.Kubernetes.Kubeconfig, "in-cluster")
	}
	assert.False(t, cfg.Runner.LeaderElection.Enabled)

	// A config change changes the checksum, so the pod restarts.
	_, m2 := mustTemplate(t, "--set", "config.max_concurrent_runs=2")
	d2 := get[*appsv1.Deployment](t, m2, "Deployment/driftwatch/driftwatch")
	assert.NotEqual(t, d.Spec.Template.Annotations["checksum/config"], d2.Spec.Template.Annotations["checksum/config"])
}

// TestChartRejects checks what must not render: the schema catches typos
// and wrong types, the templates catch unsafe combinations (also when the
// schema is skipped, as with `helm template | kubectl apply`).
func TestChartRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two replicas without leader election", []string{"--set", "replicaCount=2"}, "replicaCount > 1 requires leaderElection.enabled=true or store.postgres"},
		{"same, schema skipped", []string{"--set", "replicaCount=2", "--skip-schema-validation"}, "replicaCount > 1 requires leaderElection.enabled=true or store.postgres"},
		{"unknown top-level key", []string{"--set", "replicas=2"}, "additional properties 'replicas' not allowed"},
		{"unknown nested key", []string{"--set", "persistence.sise=2Gi"}, "additional properties 'sise' not allowed"},
		{"unknown config key", []string{"--set", "config.listen=0.0.0.0:9090"}, "additional properties 'listen' not allowed"},
		{"unknown secret", []string{"--set", "secrets.aws=creds"}, "additional properties 'aws' not allowed"},
		{"wrong type", []string{"--set", "replicaCount=one"}, "replicaCount"},
		{"bad log level", []string{"--set", "logLevel=verbose"}, "logLevel"},
		{"grace shorter than kill_grace", []string{"--set", "terminationGracePeriodSeconds=10"}, "must exceed config.terraform.kill_grace"},
		{"daemon on loopback", []string{"--set", "config.server.listen=127.0.0.1:8080"}, "config.server.listen must be"},
		{"callback on loopback", []string{"--set", "config.runner.kubernetes.callback_listen=127.0.0.1:8081", "--skip-schema-validation"},
			"config.runner.kubernetes.callback_listen must be"},
		{"callback on the http port", []string{"--set", "config.runner.kubernetes.callback_listen=:8080"},
			"config.runner.kubernetes.callback_listen (:8080) must use another port than config.server.listen"},
		{"callback on the http Service port", []string{"--set", "service.callbackPort=8080"}, "service.callbackPort must differ from service.port"},
		{"grace shorter than kill_grace in minutes", []string{"--set", "config.terraform.kill_grace=2m"}, "must exceed config.terraform.kill_grace (2m)"},
		{"unknown tool", []string{"--set", "image.tool=opentofu"}, "value must be one of 'terraform', 'tofu'"},
		{"unknown tool, schema skipped", []string{"--set", "image.tool=opentofu", "--skip-schema-validation"}, `image.tool must be terraform or tofu, not "opentofu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := template(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Allowed: more replicas with leader election, or on PostgreSQL (the
	// database's lock elects; no Lease, no PVC).
	_, err := template(t, "--set", "replicaCount=3", "--set", "leaderElection.enabled=true")
	require.NoError(t, err)
	out, m := mustTemplate(t, "--set", "replicaCount=2", "--set", "store.postgres.existingSecret=db")
	assert.Equal(t, int32(2), *get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch").Spec.Replicas)
	assert.NotContains(t, out, "leases")
	// The container port follows config.server.listen.
	_, m = mustTemplate(t, "--set", "config.server.listen=:9090")
	d := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch")
	assert.EqualValues(t, 9090, d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort)
	// The callback's, config.runner.kubernetes.callback_listen.
	_, m = mustTemplate(t, "--set", "config.runner.kubernetes.callback_listen=:9091")
	d = get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch")
	assert.EqualValues(t, 9091, d.Spec.Template.Spec.Containers[0].Ports[1].ContainerPort)
}

// TestChartTool checks image.tool: the default tag of each variant (the
// tags the Dockerfile's TOOL argument is built into: <version> and
// <version>-tofu), the same image for the daemon and the run Jobs, and the
// binary the config names (tofu for tofu, unless config.terraform.binary is
// given; none for terraform: the daemon's default, terraform then tofu
// from PATH).
func TestChartTool(t *testing.T) {
	const repo = "ghcr.io/driftwatch/driftwatch:"
	for _, tc := range []struct {
		name       string
		args       []string
		image, bin string
	}{
		{"terraform by default", nil, repo + chartAppVersion(t), ""},
		{"terraform", []string{"--set", "image.tool=terraform"}, repo + chartAppVersion(t), ""},
		{"tofu", []string{"--set", "image.tool=tofu"}, repo + chartAppVersion(t) + "-tofu", "tofu"},
		{"tofu with a tag of one's own", []string{"--set", "image.tool=tofu", "--set", "image.tag=1.2.3-opentofu"}, repo + "1.2.3-opentofu", "tofu"},
		{"tofu with a binary of one's own", []string{"--set", "image.tool=tofu", "--set", "config.terraform.binary=/opt/tofu/bin/tofu"},
			repo + chartAppVersion(t) + "-tofu", "/opt/tofu/bin/tofu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := mustTemplate(t, tc.args...)
			d := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch")
			assert.Equal(t, tc.image, d.Spec.Template.Spec.Containers[0].Image)
			cm := get[*corev1.ConfigMap](t, m, "ConfigMap/driftwatch/driftwatch")
			var rendered struct {
				Terraform map[string]any `yaml:"terraform"`
				Runner    config.Runner  `yaml:"runner"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(cm.Data["driftwatch.yaml"]), &rendered))
			assert.Equal(t, tc.image, rendered.Runner.Kubernetes.Image, "run Jobs use the daemon's image")
			bin, set := rendered.Terraform["binary"]
			if tc.bin == "" {
				assert.False(t, set, "terraform.binary: %v", bin)
			} else {
				assert.Equal(t, tc.bin, bin)
			}
			// The other terraform settings stay.
			assert.Equal(t, "/tmp", rendered.Terraform["work_dir"])
			if !strings.HasPrefix(tc.bin, "/") { // a path is checked when loaded: it is not here
				cfg, err := config.Load("/etc/driftwatch/driftwatch.yaml", []byte(cm.Data["driftwatch.yaml"]))
				require.NoError(t, err)
				assert.Equal(t, tc.bin, cfg.Terraform.Binary)
			}
		})
	}
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	require.NoError(t, err)
	var c struct {
		AppVersion string `yaml:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(data, &c))
	require.NotEmpty(t, c.AppVersion)
	return c.AppVersion
}
