package e2etest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestAcceptCLI: `driftwatch accept` on a drifted workspace prints the
// proven change as a diff; applied with `git apply`, the workspace's next
// audit is clean and nothing of the world changed. A sensitive attribute's
// drift is refused, its values nowhere in the output. A resource deleted
// by hand is refused unless --deletions asks for it: then its block
// becomes a removed block, whose forget (a state change alone) the next
// apply makes.
func TestAcceptCLI(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	for _, d := range []string{"out", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	dir := e.workspace(t, "svc", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "svc", `
variable "replicas" {
  type    = string
  default = "2" # raised by hand during incidents
}

resource "dwtest_file" "scale" {
  filename = "@ROOT@/out/scale.txt"
  content  = var.replicas
}

resource "dwtest_file" "gone" {
  filename = "@ROOT@/out/gone.txt"
  content  = "deleted by hand"
}

resource "dwtest_file" "secret" {
  filename          = "@ROOT@/out/secret.txt"
  sensitive_content = "canary-accept-old"
}
`)})
	e.apply(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "svc.txt"), []byte("edited in the console"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "scale.txt"), []byte("5"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "secret.txt"), []byte("canary-accept-new"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(e.root, "out", "gone.txt")))
	cfg := e.config(t, fmt.Sprintf("workspaces:\n  - name: svc\n    source: { path: %s }\n    backend_policy: { allow_local: true }\n", dir))

	// The deletion is refused, saying how to ask; the rest is proven.
	res := driftwatch(t, nil, "accept", "svc", "--config", cfg)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	require.Contains(t, res.stderr, "refused   dwtest_file.gone: deleted outside Terraform: accepting a deletion is a removed block with destroy = false, made only on request (driftwatch accept --deletions")
	require.NotContains(t, res.stdout, "removed")

	res = driftwatch(t, nil, "accept", "svc", "--deletions", "--config", cfg)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	require.Contains(t, res.stderr, "accepted  dwtest_file.gone: main.tf:23 (removed block)")
	require.Contains(t, res.stdout, "-resource \"dwtest_file\" \"gone\" {\n")
	require.Contains(t, res.stdout, "+removed {\n+  from = dwtest_file.gone\n+\n+  lifecycle {\n+    destroy = false\n+  }\n }\n")
	require.Contains(t, res.stderr, "accepted  dwtest_file.a.content: main.tf:10 (literal)")
	require.Contains(t, res.stderr, "accepted  dwtest_file.scale.content: main.tf:15 (variable default)")
	require.Contains(t, res.stderr, "refused   dwtest_file.secret.sensitive_content: sensitive: its value is never written or shown")
	require.Contains(t, res.stderr, "proven: ")
	require.NotContains(t, res.stdout+res.stderr, "canary")
	require.Contains(t, res.stdout, "+++ b/main.tf")
	require.Contains(t, res.stdout, `+  default = "5" # raised by hand during incidents`)

	// The diff applies to the workspace as it is (the secret put back);
	// the next audit finds no drift. The removed block leaves one planned
	// change, the forget of the deleted object (Terraform; OpenTofu
	// plans nothing and still shows the deletion until an apply), which
	// the workspace's next apply makes: then the audit is clean and
	// nothing of the world changed.
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "secret.txt"), []byte("canary-accept-old"), 0o644))
	patch := filepath.Join(e.root, "accept.diff")
	require.NoError(t, os.WriteFile(patch, []byte(res.stdout), 0o644))
	cmd := exec.Command("git", "apply", "-p1", patch)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git apply: %s", out)
	audit := driftwatch(t, nil, "audit", "--config", cfg, "--format", "json")
	var rep struct {
		Workspaces []struct {
			Findings []struct{ Kind, Address, Action string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(audit.stdout), &rep), audit.stdout)
	require.Len(t, rep.Workspaces, 1)
	var findings []string
	for _, f := range rep.Workspaces[0].Findings {
		if f.Kind == "drift" || f.Kind == "pending" {
			findings = append(findings, f.Kind+" "+f.Address+" "+f.Action)
		}
	}
	require.Equal(t, 2, audit.code)
	if sandbox.ToolName(e.bin) == "tofu" {
		require.Equal(t, []string{"drift dwtest_file.gone delete"}, findings, audit.stderr)
	} else {
		require.Equal(t, []string{"pending dwtest_file.gone forget"}, findings, audit.stderr)
	}
	e.apply(t, dir)
	audit = driftwatch(t, nil, "audit", "--config", cfg, "--format", "json")
	require.Equal(t, 0, audit.code, "audit after the accepted change, applied:\n%s\n%s", audit.stdout, audit.stderr)
	require.Equal(t, "edited in the console", mustRead(t, filepath.Join(e.root, "out", "svc.txt")))
	require.NoFileExists(t, filepath.Join(e.root, "out", "gone.txt"))

	// Asked for an address with no drift, or a workspace not there.
	res = driftwatch(t, nil, "accept", "svc", "dwtest_file.a", "--config", cfg)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "no drift to accept")
	res = driftwatch(t, nil, "accept", "nope", "--config", cfg)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "unknown workspace nope")
}
