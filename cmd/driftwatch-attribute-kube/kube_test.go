//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift/attribution"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// auditPolicy logs who changed ConfigMaps, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps"]
- level: None
`

// TestAdapterNamesWhoEditedAConfigMap: against a real kube-apiserver
// writing an audit log, a ServiceAccount with a Role edits a ConfigMap
// that the admin created, and the adapter names it; then the admin,
// impersonating a user, edits it again.
func TestAdapterNamesWhoEditedAConfigMap(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(auditPolicy), 0o600))
	auditLog := filepath.Join(dir, "audit.log")
	c := kubetest.Start(t, kubetest.WithAPIServerFlags(
		"--audit-policy-file="+policy,
		"--audit-log-path="+auditLog,
		"--audit-log-format=json",
	))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	admin, err := c.Clientset()
	require.NoError(t, err)

	const ns = "apps"
	require.NoError(t, c.CreateNamespace(ctx, ns, nil))
	created := time.Now()
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"mode": "a"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The editor: a ServiceAccount allowed to patch ConfigMaps of apps.
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "editor"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-editor"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch", "update"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "editor"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-editor"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "editor", Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "editor", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	editorConfig := c.RESTConfig()
	editorConfig.BearerToken = tok.Status.Token
	editor, err := kubernetes.NewForConfig(editorConfig)
	require.NoError(t, err)

	edited := time.Now()
	patch := func(cs kubernetes.Interface, mode string) {
		t.Helper()
		require.Eventually(t, func() bool { // the RoleBinding may take a moment to apply
			_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType,
				[]byte(`{"data":{"mode":"`+mode+`"}}`), metav1.PatchOptions{})
			return err == nil
		}, 30*time.Second, 100*time.Millisecond)
	}
	patch(editor, "b")
	afterEdit := time.Now()

	cmd := adapter(t, auditLog)
	q := attribution.Query{
		Workspace: "apps", Address: "kubernetes_config_map_v1.settings", Type: "kubernetes_config_map_v1",
		IDs:    attribution.IDs(map[string]any{"id": ns + "/settings", "metadata": []any{map[string]any{"name": "settings", "namespace": ns}}}),
		Window: attribution.Window{From: edited, To: afterEdit.Add(time.Second)},
	}
	// The event of a request is written as it completes: wait for it.
	var a attribution.Answer
	require.Eventually(t, func() bool {
		a, err = cmd.Ask(ctx, q)
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "last error: %v", err)
	require.Equal(t, "system:serviceaccount:apps:editor", a.Actor)
	require.Equal(t, "kubernetes-audit", a.Source)
	require.NotEmpty(t, a.EventID)
	require.False(t, a.Time.Before(edited.Truncate(time.Microsecond)), "%s before %s", a.Time, edited)
	require.False(t, a.Time.After(afterEdit.Add(time.Second)))

	// The window before the edit holds the admin's create.
	q.Window = attribution.Window{From: created, To: edited}
	a, err = cmd.Ask(ctx, q)
	require.NoError(t, err)
	require.Equal(t, "kubetest-admin", a.Actor)

	// The admin, impersonating a user, edits it again.
	asFrank := c.RESTConfig()
	asFrank.Impersonate.UserName = "frank"
	asFrank.Impersonate.Groups = []string{"system:masters"}
	frank, err := kubernetes.NewForConfig(asFrank)
	require.NoError(t, err)
	impersonated := time.Now()
	patch(frank, "c")
	q.Window = attribution.Window{From: impersonated, To: time.Now().Add(time.Second)}
	require.Eventually(t, func() bool {
		a, err = cmd.Ask(ctx, q)
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "last error: %v", err)
	require.Equal(t, "frank (impersonated by kubetest-admin)", a.Actor)

	// A ConfigMap nobody touched: the adapter's "nothing found" is an error.
	q.IDs = map[string]string{"id": ns + "/other"}
	q.Window = attribution.Window{From: created, To: time.Now()}
	_, err = cmd.Ask(ctx, q)
	require.ErrorContains(t, err, "exit status 1: stderr: driftwatch-attribute-kube: no create/update/patch/delete of configmaps apps/other")
}

func ptr[T any](v T) *T { return &v }
