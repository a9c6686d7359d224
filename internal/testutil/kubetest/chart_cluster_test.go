//go:build linux

package kubetest

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChartServerSideDryRun validates both renderings with the real API
// server (schemas of every kind, the ServiceMonitor and PrometheusRule CRDs' too), in
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
// ServiceMonitor and PrometheusRule CRDs, so the chart's ServiceMonitor and
// PrometheusRule are validated against them.
func installServiceMonitorCRD(t *testing.T, c *Cluster) {
	t.Helper()
	for _, crd := range []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"} {
		_, err := c.Kubectl("apply", "--server-side", "-f", filepath.Join("testdata", crd+".yaml"))
		require.NoError(t, err)
		_, err = c.Kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd)
		require.NoError(t, err)
	}
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

type saUser struct{ ns, name string }

func (u saUser) user() string { return "system:serviceaccount:" + u.ns + ":" + u.name }
