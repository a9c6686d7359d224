//go:build linux

package kubetest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftwatch/driftwatch/internal/config"
)

// TestChartFull checks the optional features of ci/ci-values.yaml: Secrets
// as read-only files, RBAC in the run namespace and for the Lease, the
// NetworkPolicy, ServiceMonitor, PrometheusRule and Grafana dashboard.
func TestChartFull(t *testing.T) {
	_, m := mustTemplate(t, "-f", ciValues(t))
	for _, k := range []string{
		"NetworkPolicy/driftwatch/driftwatch-ci",
		"ServiceMonitor/driftwatch/driftwatch-ci",
		"PrometheusRule/driftwatch/driftwatch-ci",
		"ConfigMap/driftwatch/driftwatch-ci-dashboard",
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
		assert.Equal(t, "https://driftwatch-ci.driftwatch.svc:9443", r.Kubernetes.CallbackURL, "ci-values.yaml turns tls on")
		assert.Equal(t, "0.0.0.0:9081", r.Kubernetes.CallbackListen)
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
		require.NoError(t, err, "the certificate verifies for %s with ca.crt", n)
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
		assert.Equal(t, "https://driftwatch.driftwatch.svc:8081", cfg.Runner.Kubernetes.CallbackURL)
		assert.Equal(t, ":8081", cfg.Runner.Kubernetes.CallbackListen, "the callback's own listener, over TLS with the same files")
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
