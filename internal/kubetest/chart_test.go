//go:build linux

package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	d, err := filepath.Abs(filepath.Join("..", "..", "charts", "driftwatch"))
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

	// On by default: the daemon admits HTTP from its namespace, run pods
	// and the monitoring namespace; run pods admit nothing and may not
	// reach the cloud metadata endpoints.
	np := get[*networkingv1.NetworkPolicy](t, m, "NetworkPolicy/driftwatch/driftwatch")
	require.Len(t, np.Spec.Ingress, 1)
	var from []string
	for _, p := range np.Spec.Ingress[0].From {
		b, _ := json.Marshal(p)
		from = append(from, string(b))
	}
	assert.Contains(t, from, `{"podSelector":{}}`)
	assert.Contains(t, from, `{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}`)
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
	require.Len(t, c.Ports, 1)
	assert.EqualValues(t, 8080, c.Ports[0].ContainerPort)

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
		assert.Equal(t, "http://driftwatch.driftwatch.svc:8080", cfg.Runner.Kubernetes.CallbackURL)
		assert.Empty(t, cfg.Runner.Kubernetes.Kubeconfig, "in-cluster")
	}
	assert.False(t, cfg.Runner.LeaderElection.Enabled)

	// A config change changes the checksum, so the pod restarts.
	_, m2 := mustTemplate(t, "--set", "config.max_concurrent_runs=2")
	d2 := get[*appsv1.Deployment](t, m2, "Deployment/driftwatch/driftwatch")
	assert.NotEqual(t, d.Spec.Template.Annotations["checksum/config"], d2.Spec.Template.Annotations["checksum/config"])
}

// TestChartFull checks the optional features of ci/ci-values.yaml: Secrets
// as read-only files, RBAC in the run namespace and for the Lease, the
// NetworkPolicy and ServiceMonitor.
func TestChartFull(t *testing.T) {
	_, m := mustTemplate(t, "-f", ciValues(t))
	for _, k := range []string{
		"NetworkPolicy/driftwatch/driftwatch-ci",
		"ServiceMonitor/driftwatch/driftwatch-ci",
		"ServiceAccount/driftwatch-runs/driftwatch-plan",
		"Role/driftwatch/driftwatch-ci-leader-election",
	} {
		assert.Contains(t, m, k)
	}
	d := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch-ci")
	assert.EqualValues(t, 2, *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	assert.Equal(t, "driftwatch-daemon", pod.ServiceAccountName)
	c := pod.Containers[0]
	assert.Equal(t, "registry.example.com/platform/driftwatch:v0.1.0-ci", c.Image)

	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, name := range []string{"slack", "opsgenie", "git", "cloud"} {
		var mount *corev1.VolumeMount
		for i, vm := range c.VolumeMounts {
			if vm.MountPath == "/var/run/secrets/driftwatch/"+name {
				mount = &c.VolumeMounts[i]
			}
		}
		if assert.NotNil(t, mount, name) {
			assert.True(t, mount.ReadOnly, name)
			s := vols[mount.Name].Secret
			if assert.NotNil(t, s, name) {
				assert.Equal(t, "driftwatch-"+name, s.SecretName)
				assert.Equal(t, ptrTo[int32](0o440), s.DefaultMode)
			}
		}
	}

	role := get[*rbacv1.Role](t, m, "Role/driftwatch-runs/driftwatch-ci")
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}, role.Rules)
	rb := get[*rbacv1.RoleBinding](t, m, "RoleBinding/driftwatch-runs/driftwatch-ci")
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "driftwatch-daemon", Namespace: chartNamespace}}, rb.Subjects)

	// driftwatch's strict loader accepts the config; only the secret files
	// (mounted in the real pod) are missing here.
	cm := get[*corev1.ConfigMap](t, m, "ConfigMap/driftwatch/driftwatch-ci")
	_, err := config.Load("/etc/driftwatch/driftwatch.yaml", []byte(cm.Data["driftwatch.yaml"]))
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			assert.True(t, strings.Contains(line, "/var/run/secrets/driftwatch/") && strings.Contains(line, "no such file"),
				"config error other than a missing secret file: %s", line)
		}
	}
	// The runner block is generated from the chart's values.
	var rendered struct {
		Runner config.Runner `yaml:"runner"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["driftwatch.yaml"]), &rendered))
	r := rendered.Runner
	assert.Equal(t, config.RunnerModeKubernetes, r.Mode)
	if assert.NotNil(t, r.Kubernetes) {
		assert.Equal(t, "driftwatch-runs", r.Kubernetes.Namespace)
		assert.Equal(t, "driftwatch-plan", r.Kubernetes.ServiceAccount)
		assert.Equal(t, "registry.example.com/platform/driftwatch:v0.1.0-ci", r.Kubernetes.Image)
		assert.Equal(t, "https://driftwatch-ci.driftwatch.svc:8080", r.Kubernetes.CallbackURL, "ci-values.yaml turns tls on")
	}
	assert.Equal(t, config.LeaderElection{Enabled: true, LeaseName: "driftwatch-ci-lock", Namespace: chartNamespace}, r.LeaderElection)
}

// TestChartTLS renders tls.enabled: a generated CA and serving certificate
// for the Service's names in a Secret the daemon mounts, a config the
// daemon loads with them (HTTPS, an https callback verified with the CA),
// probes over HTTPS; and tls.existingSecret instead. Key material is
// never part of a failure message.
func TestChartTLS(t *testing.T) {
	_, m := mustTemplate(t, "--set", "tls.enabled=true", "--set", "serviceMonitor.enabled=true")
	obj, ok := m["Secret/driftwatch/driftwatch-tls"]
	require.True(t, ok, "no TLS Secret rendered; have %v", keys(m))
	sec, ok := obj.(*corev1.Secret)
	require.True(t, ok)
	assert.Equal(t, corev1.SecretTypeTLS, sec.Type)
	files := map[string][]byte{}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		require.NotEmpty(t, sec.Data[k], "Secret key %s", k)
		files[k] = sec.Data[k]
	}
	require.Len(t, sec.Data, 3, "tls.crt, tls.key and ca.crt only (no CA key)")
	_, err := tls.X509KeyPair(files["tls.crt"], files["tls.key"])
	require.NoError(t, err, "tls.crt and tls.key are a pair") // the error names no key material
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(files["ca.crt"]), "ca.crt holds a certificate")
	block, _ := pem.Decode(files["tls.crt"])
	require.NotNil(t, block)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	names := []string{"driftwatch", "driftwatch.driftwatch", "driftwatch.driftwatch.svc", "driftwatch.driftwatch.svc.cluster.local"}
	assert.ElementsMatch(t, names, leaf.DNSNames)
	for _, n := range names {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: n})
		assert.NoError(t, err, "the certificate verifies for %s with ca.crt", n)
	}

	d := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	var mount *corev1.VolumeMount
	for i, vm := range c.VolumeMounts {
		if vm.MountPath == "/var/run/secrets/driftwatch/tls" {
			mount = &c.VolumeMounts[i]
		}
	}
	require.NotNil(t, mount, "the daemon mounts the TLS Secret")
	assert.True(t, mount.ReadOnly)
	var vol *corev1.Volume
	for i, v := range pod.Volumes {
		if v.Name == mount.Name {
			vol = &pod.Volumes[i]
		}
	}
	require.NotNil(t, vol)
	require.NotNil(t, vol.Secret)
	assert.Equal(t, "driftwatch-tls", vol.Secret.SecretName)
	assert.Equal(t, ptrTo[int32](0o440), vol.Secret.DefaultMode)
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		require.NotNil(t, p, name)
		require.NotNil(t, p.HTTPGet, name)
		assert.Equal(t, corev1.URISchemeHTTPS, p.HTTPGet.Scheme, name)
	}

	// The daemon's own loader accepts the config with the Secret's files
	// where the pod mounts them (here: a temporary directory).
	cm := get[*corev1.ConfigMap](t, m, "ConfigMap/driftwatch/driftwatch")
	rendered := cm.Data["driftwatch.yaml"]
	require.Contains(t, rendered, "/var/run/secrets/driftwatch/tls/")
	dir := t.TempDir()
	for k, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), b, 0o600))
	}
	cfg, err := config.Load("/etc/driftwatch/driftwatch.yaml", []byte(strings.ReplaceAll(rendered, "/var/run/secrets/driftwatch/tls", dir)))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "tls.crt"), cfg.Server.TLSCertFile)
	assert.Equal(t, filepath.Join(dir, "tls.key"), cfg.Server.TLSKeyFile)
	if assert.NotNil(t, cfg.Runner.Kubernetes) {
		assert.Equal(t, "https://driftwatch.driftwatch.svc:8080", cfg.Runner.Kubernetes.CallbackURL)
		assert.Equal(t, filepath.Join(dir, "ca.crt"), cfg.Runner.Kubernetes.CallbackCAFile)
	}

	// Prometheus scrapes over HTTPS, verifying with the CA.
	sm, ok := m["ServiceMonitor/driftwatch/driftwatch"].(*runtime.Unknown)
	require.True(t, ok)
	var smSpec struct {
		Spec struct {
			Endpoints []map[string]any `json:"endpoints"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(sm.Raw, &smSpec))
	require.Len(t, smSpec.Spec.Endpoints, 1)
	assert.Equal(t, "https", smSpec.Spec.Endpoints[0]["scheme"])
	assert.Equal(t, map[string]any{"serverName": "driftwatch.driftwatch.svc",
		"ca": map[string]any{"secret": map[string]any{"name": "driftwatch-tls", "key": "ca.crt"}}}, smSpec.Spec.Endpoints[0]["tlsConfig"])

	// An existing (cert-manager) Secret instead: nothing generated.
	_, m2 := mustTemplate(t, "--set", "tls.enabled=true", "--set", "tls.existingSecret=driftwatch-cert")
	_, generated := m2["Secret/driftwatch/driftwatch-tls"]
	assert.False(t, generated)
	d2 := get[*appsv1.Deployment](t, m2, "Deployment/driftwatch/driftwatch")
	var secretNames []string
	for _, v := range d2.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secretNames = append(secretNames, v.Secret.SecretName)
		}
	}
	assert.Equal(t, []string{"driftwatch-cert"}, secretNames)

	// Off by default; an existing Secret without tls.enabled is a mistake.
	_, m3 := mustTemplate(t)
	for k := range m3 {
		assert.False(t, strings.HasPrefix(k, "Secret/"), "%s rendered without tls.enabled", k)
	}
	_, err = template(t, "--set", "tls.existingSecret=driftwatch-cert")
	require.ErrorContains(t, err, "tls.existingSecret needs tls.enabled=true")
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
		{"two replicas without leader election", []string{"--set", "replicaCount=2"}, "replicaCount > 1 requires leaderElection.enabled=true"},
		{"same, schema skipped", []string{"--set", "replicaCount=2", "--skip-schema-validation"}, "replicaCount > 1 requires leaderElection.enabled=true"},
		{"unknown top-level key", []string{"--set", "replicas=2"}, "additional properties 'replicas' not allowed"},
		{"unknown nested key", []string{"--set", "persistence.sise=2Gi"}, "additional properties 'sise' not allowed"},
		{"unknown config key", []string{"--set", "config.listen=0.0.0.0:9090"}, "additional properties 'listen' not allowed"},
		{"unknown secret", []string{"--set", "secrets.aws=creds"}, "additional properties 'aws' not allowed"},
		{"wrong type", []string{"--set", "replicaCount=one"}, "replicaCount"},
		{"bad log level", []string{"--set", "logLevel=verbose"}, "logLevel"},
		{"grace shorter than kill_grace", []string{"--set", "terminationGracePeriodSeconds=10"}, "must exceed config.terraform.kill_grace"},
		{"daemon on loopback", []string{"--set", "config.server.listen=127.0.0.1:8080"}, "config.server.listen must be"},
		{"grace shorter than kill_grace in minutes", []string{"--set", "config.terraform.kill_grace=2m"}, "must exceed config.terraform.kill_grace (2m)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := template(t, tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Allowed: more replicas with leader election.
	_, err := template(t, "--set", "replicaCount=3", "--set", "leaderElection.enabled=true")
	require.NoError(t, err)
	// The container port follows config.server.listen.
	_, m := mustTemplate(t, "--set", "config.server.listen=:9090")
	d := get[*appsv1.Deployment](t, m, "Deployment/driftwatch/driftwatch")
	assert.EqualValues(t, 9090, d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort)
}

// TestChartServerSideDryRun validates both renderings with the real API
// server (schemas of every kind, the ServiceMonitor CRD's too), in
// namespaces that warn on anything short of the "restricted" Pod Security
// level.
func TestChartServerSideDryRun(t *testing.T) {
	c := Start(t)
	ctx := t.Context()
	restricted := map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}
	require.NoError(t, c.CreateNamespace(ctx, chartNamespace, restricted))
	require.NoError(t, c.CreateNamespace(ctx, ciRunNamespace, restricted))
	installServiceMonitorCRD(t, c)

	for name, args := range map[string][]string{
		"default": nil,
		"ci":      {"-f", ciValues(t)},
	} {
		t.Run(name, func(t *testing.T) {
			manifest, m := mustTemplate(t, args...)
			stdout, stderr := dryRun(t, c, manifest)
			assert.Len(t, strings.Fields(stdout), len(m), stdout)
			// Pod Security warns about Deployments whose pods it would refuse.
			assert.NotContains(t, stderr, "PodSecurity")
			assert.NotContains(t, stderr, "Warning")
		})
	}
	// The warning check above is not vacuous: a root container is reported.
	manifest, _ := mustTemplate(t, "--set", "podSecurityContext.runAsNonRoot=false", "--set", "securityContext.runAsNonRoot=false")
	_, stderr := dryRun(t, c, manifest)
	assert.Contains(t, stderr, `would violate PodSecurity "restricted:latest"`)
}

// installServiceMonitorCRD installs prometheus-operator's real
// ServiceMonitor CRD, so the chart's ServiceMonitor is validated against it.
func installServiceMonitorCRD(t *testing.T, c *Cluster) {
	t.Helper()
	_, err := c.Kubectl("apply", "--server-side", "-f", filepath.Join("testdata", "servicemonitors.monitoring.coreos.com.yaml"))
	require.NoError(t, err)
	_, err = c.Kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com")
	require.NoError(t, err)
}

// dryRun validates manifest with `kubectl apply --dry-run=server`.
func dryRun(t *testing.T, c *Cluster, manifest string) (stdout, stderr string) {
	t.Helper()
	cmd := c.KubectlCmd(t.Context(), "apply", "--dry-run=server", "-o", "name", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "kubectl apply --dry-run=server:\n%s", errOut.String())
	return out.String(), errOut.String()
}

// TestChartRBAC installs the full chart for real and asks the API server's
// RBAC authorizer what the daemon and the run pods may do.
func TestChartRBAC(t *testing.T) {
	c := Start(t)
	ctx := t.Context()
	require.NoError(t, c.CreateNamespace(ctx, chartNamespace, nil))
	require.NoError(t, c.CreateNamespace(ctx, ciRunNamespace, nil))
	installServiceMonitorCRD(t, c)
	// Never --wait: without a kubelet nothing becomes ready.
	out, err := helm(t, "install", chartRelease, chartDir(t), "--namespace", chartNamespace,
		"--kubeconfig", c.Kubeconfig, "-f", ciValues(t))
	require.NoError(t, err)
	assert.Contains(t, out, "STATUS: deployed")
	assert.Contains(t, out, "driftwatch-runs as ServiceAccount driftwatch-plan") // NOTES.txt

	// SubjectAccessReviews ask the RBAC authorizer exactly (kubectl auth
	// can-i would read "pods/log" as the pod named "log").
	cs, err := c.Clientset()
	require.NoError(t, err)
	daemon := saUser{chartNamespace, "driftwatch-daemon"}
	run := saUser{ciRunNamespace, "driftwatch-plan"}
	for _, tc := range []struct {
		as                                  saUser
		ns, verb, group, resource, sub, obj string
		allowed                             bool
	}{
		{daemon, ciRunNamespace, "create", "batch", "jobs", "", "", true},
		{daemon, ciRunNamespace, "get", "batch", "jobs", "", "", true},
		{daemon, ciRunNamespace, "list", "batch", "jobs", "", "", true},
		{daemon, ciRunNamespace, "watch", "batch", "jobs", "", "", true},
		{daemon, ciRunNamespace, "delete", "batch", "jobs", "", "", true},
		{daemon, ciRunNamespace, "update", "batch", "jobs", "", "", false},
		{daemon, ciRunNamespace, "patch", "batch", "jobs", "", "", false},
		{daemon, ciRunNamespace, "deletecollection", "batch", "jobs", "", "", false},
		{daemon, ciRunNamespace, "list", "", "pods", "", "", true},
		{daemon, ciRunNamespace, "create", "", "pods", "", "", false},
		{daemon, ciRunNamespace, "delete", "", "pods", "", "", false},
		{daemon, ciRunNamespace, "update", "", "pods", "status", "", false},
		{daemon, ciRunNamespace, "get", "", "pods", "log", "", false},
		{daemon, ciRunNamespace, "create", "", "pods", "exec", "", false},
		{daemon, ciRunNamespace, "create", "", "secrets", "", "", true},
		{daemon, ciRunNamespace, "get", "", "secrets", "", "", false}, // created only: the GC deletes them with their Job
		{daemon, ciRunNamespace, "delete", "", "secrets", "", "", false},
		{daemon, ciRunNamespace, "list", "", "secrets", "", "", false},
		{daemon, ciRunNamespace, "update", "", "secrets", "", "", false},
		{daemon, ciRunNamespace, "create", "", "events", "", "", true},
		{daemon, ciRunNamespace, "patch", "", "events", "", "", false},
		{daemon, ciRunNamespace, "create", "", "configmaps", "", "", false},
		{daemon, chartNamespace, "create", "batch", "jobs", "", "", false}, // only in the run namespace
		{daemon, chartNamespace, "get", "", "secrets", "", "", false},
		{daemon, chartNamespace, "create", "coordination.k8s.io", "leases", "", "", true},
		{daemon, chartNamespace, "get", "coordination.k8s.io", "leases", "", "driftwatch-ci-lock", true},
		{daemon, chartNamespace, "update", "coordination.k8s.io", "leases", "", "driftwatch-ci-lock", true},
		{daemon, chartNamespace, "update", "coordination.k8s.io", "leases", "", "other", false},
		{daemon, chartNamespace, "delete", "coordination.k8s.io", "leases", "", "driftwatch-ci-lock", false},
		{daemon, chartNamespace, "list", "coordination.k8s.io", "leases", "", "", false},
		{daemon, ciRunNamespace, "get", "coordination.k8s.io", "leases", "", "driftwatch-ci-lock", false},
		{run, ciRunNamespace, "get", "", "pods", "", "", false},
		{run, ciRunNamespace, "get", "", "secrets", "", "", false},
		{run, ciRunNamespace, "list", "batch", "jobs", "", "", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   tc.as.user(),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + tc.as.ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: tc.ns, Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.sub, Name: tc.obj,
			},
		}}
		res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, tc.allowed, res.Status.Allowed, "%s may %s %s.%s/%s %s in %s (%s)",
			tc.as.user(), tc.verb, tc.resource, tc.group, tc.sub, tc.obj, tc.ns, res.Status.Reason)
	}

	// Uninstall keeps the PVC (the run history).
	_, err = helm(t, "uninstall", chartRelease, "--namespace", chartNamespace, "--kubeconfig", c.Kubeconfig)
	require.NoError(t, err)
	out, err = c.Kubectl("get", "pvc", "-n", chartNamespace, "-o", "name")
	require.NoError(t, err)
	assert.Equal(t, "persistentvolumeclaim/driftwatch-ci", strings.TrimSpace(out))
}

// TestChartDocs checks values.yaml, values.schema.json and README.md agree:
// every documented value is in README.md, every value key is in the schema,
// and the schema's config keys are driftwatch's config keys.
func TestChartDocs(t *testing.T) {
	dir := chartDir(t)
	valuesYAML, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	var values map[string]any
	require.NoError(t, yaml.Unmarshal(valuesYAML, &values))

	// Top-level keys, and every key documented with `# --`, are in README.md.
	for k := range values {
		assert.Contains(t, string(readme), "`"+k, "README.md does not mention value %s", k)
	}
	for _, p := range documentedPaths(t, valuesYAML) {
		assert.Contains(t, string(readme), "| `"+p+"` |", "README.md has no row for %s", p)
	}

	// Every key of values.yaml (and of ci-values.yaml) is declared by the
	// schema, as far as the schema is strict.
	schemaJSON, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(schemaJSON, &schema))
	assert.Equal(t, false, schema["additionalProperties"], "the schema's top level must reject unknown keys")
	checkSchemaKeys(t, "", schema, values)
	ciYAML, err := os.ReadFile(ciValues(t))
	require.NoError(t, err)
	var ci map[string]any
	require.NoError(t, yaml.Unmarshal(ciYAML, &ci))
	checkSchemaKeys(t, "", schema, ci)
	// ci/ci-values.yaml turns every feature on; it leaves only the sandbox and
	// probes at their defaults, so the server-side dry run checks those too.
	for k := range values {
		switch k {
		case "podSecurityContext", "securityContext", "livenessProbe", "readinessProbe":
			continue
		}
		_, ok := ci[k]
		assert.True(t, ok, "ci/ci-values.yaml should set %s", k)
	}

	// config's keys follow internal/config.Config: a new config key needs
	// its line in values.schema.json (properties.config.properties).
	cfgSchema := schema["properties"].(map[string]any)["config"].(map[string]any)
	var schemaKeys []string
	for k := range cfgSchema["properties"].(map[string]any) {
		schemaKeys = append(schemaKeys, k)
	}
	var cfgKeys []string
	ty := reflect.TypeFor[config.Config]()
	for i := range ty.NumField() {
		tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			cfgKeys = append(cfgKeys, tag)
		}
	}
	assert.ElementsMatch(t, cfgKeys, schemaKeys, "values.schema.json properties.config.properties vs internal/config.Config")
}

// documentedPaths returns the dotted paths of values.yaml keys that carry a
// `# --` comment.
func documentedPaths(t *testing.T, data []byte) []string {
	t.Helper()
	keyLine := regexp.MustCompile(`^(\s*)([A-Za-z0-9_]+):`)
	type level struct {
		indent int
		key    string
	}
	var stack []level
	var paths []string
	documented := false
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "# --") {
			documented = true
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent, m[2]})
		if documented {
			var parts []string
			for _, l := range stack {
				parts = append(parts, l.key)
			}
			paths = append(paths, strings.Join(parts, "."))
		}
		documented = false
	}
	require.NotEmpty(t, paths)
	return paths
}

// checkSchemaKeys walks values along the schema: under an object schema with
// additionalProperties false, every key must be a declared property.
func checkSchemaKeys(t *testing.T, path string, schema map[string]any, v any) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	strict := schema["additionalProperties"] == false
	for k, sub := range obj {
		p := strings.TrimPrefix(path+"."+k, ".")
		ps, ok := props[k].(map[string]any)
		if !ok {
			assert.False(t, strict, "values key %s is not in values.schema.json", p)
			continue
		}
		checkSchemaKeys(t, p, ps, sub)
	}
}

type saUser struct{ ns, name string }

func (u saUser) user() string { return "system:serviceaccount:" + u.ns + ":" + u.name }

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
