//go:build linux

package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// TestKubernetesProviderSignalPrecision audits a config map managed by the
// real hashicorp/kubernetes provider against the real kube-apiserver, with
// Terraform and OpenTofu, and changes it behind Terraform's back:
//
//   - a change only the server makes to what the code manages (a finalizer
//     added: the object's resource_version moves, nothing configured does)
//     is noise: no drift finding, only the forbidden rule's;
//   - an edit of data and of a label (what kubectl edit does) is drift
//     that lists exactly those two paths: not metadata[0].resource_version,
//     which the server changed too, nor the provider's null -> {} round
//     trips.
//
// The provider's plan keeps resource_version at its refreshed value, so
// the plan does not set it back; driftwatch decides that from the plan
// alone, with no list of attribute names.
func TestKubernetesProviderSignalPrecision(t *testing.T) {
	parallel(t)
	cluster := kubetest.Start(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		name := "dw-precision-" + filepath.Base(e.bin)
		kc, err := os.ReadFile(cluster.Kubeconfig)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(e.root, "kubeconfig"), kc, 0o600))
		dir := e.workspace(t, "k8s", map[string]string{"main.tf": fmt.Sprintf(`
terraform {
  required_providers {
    kubernetes = { source = "hashicorp/kubernetes", version = "1.13.4" }
  }
}
provider "kubernetes" {
  config_path      = "@ROOT@/kubeconfig"
  load_config_file = true
}
resource "kubernetes_config_map" "cm" {
  metadata {
    name      = %q
    namespace = "default"
    labels    = { team = "a" }
  }
  data = { mode = "on" }
}
`, name)})
		e.apply(t, dir)
		// A plan right after the apply already refreshes binary_data and
		// annotations from null to {}: apply again so that the state holds
		// what the provider reads back, as it would after a day of runs.
		e.apply(t, dir, "-refresh-only")
		// The jailed runs reach the cluster's API server on this machine's
		// loopback only because the workspace lists its port.
		apiserver := strings.TrimPrefix(cluster.Server, "https://")
		cfg := e.config(t, fmt.Sprintf("workspaces:\n  - name: k8s\n    source: { path: %s }\n    sandbox_host_ports: [%q]\n", dir, apiserver))

		audit := func(t *testing.T) (drift.Status, []drift.Finding) {
			t.Helper()
			r := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json")
			require.NotEqual(t, 1, r.code, "audit failed:\n%s", r.stderr)
			st, msg, fs := parseReport(t, r.stdout).ws(t, "k8s")
			require.Empty(t, msg)
			return st, fs
		}
		byKind := func(fs []drift.Finding, kind drift.Kind) []drift.Finding {
			var out []drift.Finding
			for _, f := range fs {
				if f.Kind == kind {
					out = append(out, f)
				}
			}
			return out
		}

		// A server-side change: resource_version alone moves.
		_, err = cluster.Kubectl("patch", "configmap", name, "-n", "default", "--type=merge",
			"-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = cluster.Kubectl("patch", "configmap", name, "-n", "default", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		})
		st, fs := audit(t)
		require.Equal(t, drift.StatusForbidden, st, "kubernetes_* is forbidden by default; no drift: %+v", fs)
		require.Empty(t, byKind(fs, drift.KindDrift), "a server-only change is not drift")
		noise := byKind(fs, drift.KindNoise)
		require.Len(t, noise, 1, "%+v", fs)
		require.Equal(t, "kubernetes_config_map.cm", noise[0].Address)
		require.Equal(t, []string{"metadata[0].resource_version"}, noise[0].Attributes, "the noise says what changed")

		// kubectl edit of what the code manages.
		_, err = cluster.Kubectl("patch", "configmap", name, "-n", "default", "--type=merge",
			"-p", `{"metadata":{"labels":{"team":"b"}},"data":{"mode":"off"}}`)
		require.NoError(t, err)
		st, fs = audit(t)
		require.Equal(t, drift.StatusForbidden, st, "forbidden outranks drift: %+v", fs)
		drifted := byKind(fs, drift.KindDrift)
		require.Len(t, drifted, 1, "%+v", fs)
		require.Equal(t, "kubernetes_config_map.cm", drifted[0].Address)
		require.Equal(t, "update", drifted[0].Action)
		require.Equal(t, []string{"data.mode", "metadata[0].labels.team"}, drifted[0].Attributes,
			"what the plan sets back, not the server-managed resource_version")
		require.Empty(t, byKind(fs, drift.KindPending), "the change is the drift's, not pending")
		require.Len(t, byKind(fs, drift.KindForbidden), 1)
	})
}
