package accept_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// The workspace of the proof: one file resource per place a value can be
// set, and one sensitive attribute.
const proofMain = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

locals {
  greeting = "hello" # from a local
}

variable "fromvars" {
  type = string
}

variable "fromdefault" {
  type    = string
  default = "default value"
}

variable "secret" {
  type      = string
  sensitive = true
  default   = "canary-secret-0"
}

resource "dwtest_file" "literal" {
  filename = "${path.module}/out/literal.txt"
  content  = "v1"
}

resource "dwtest_file" "local" {
  filename = "${path.module}/out/local.txt"
  content  = local.greeting
}

resource "dwtest_file" "tfvars" {
  filename = "${path.module}/out/tfvars.txt"
  content  = var.fromvars
}

resource "dwtest_file" "default" {
  filename = "${path.module}/out/default.txt"
  content  = var.fromdefault
}

resource "dwtest_file" "secret" {
  filename          = "${path.module}/out/secret.txt"
  sensitive_content = var.secret
}

module "child" {
  source = "./child"
  text   = "module input"
}
`

const proofChild = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

variable "text" {
  type = string
}

resource "dwtest_file" "input" {
  filename = "${path.root}/out/input.txt"
  content  = var.text
}
`

// tf runs Terraform in dir and returns its exit code (0 or 2 with
// -detailed-exitcode) and output.
func tf(t *testing.T, bin, cli, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TF_CLI_CONFIG_FILE=" + cli, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		return 2, string(out)
	}
	require.NoError(t, err, "%s %v:\n%s%s", bin, args, out, func() string {
		if ee != nil {
			return string(ee.Stderr)
		}
		return ""
	}())
	return 0, string(out)
}

// With real Terraform and OpenTofu: drift made behind Terraform's back in
// each place a value can be set is accepted, and a plan of the changed
// code shows no change; the sensitive attribute is refused, its values
// nowhere in the change or the refusals.
func TestAcceptProvenByAPlan(t *testing.T) {
	bins, cli := tftest.Tools(t)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "child"), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
			for name, body := range map[string]string{"main.tf": proofMain, "child/main.tf": proofChild,
				"prod.tfvars": "# per environment\nfromvars = \"from tfvars\"\n"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
			}
			tf(t, bin, cli, dir, "init", "-input=false", "-no-color")
			tf(t, bin, cli, dir, "apply", "-auto-approve", "-input=false", "-no-color", "-var-file=prod.tfvars")
			for _, f := range []string{"literal", "local", "tfvars", "default", "input"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "out", f+".txt"), []byte("changed by hand: "+f), 0o644))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "secret.txt"), []byte("canary-secret-1"), 0o644))
			code, _ := tf(t, bin, cli, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-var-file=prod.tfvars", "-out=drift.tfplan")
			require.Equal(t, 2, code)
			_, js := tf(t, bin, cli, dir, "show", "-json", "drift.tfplan")
			var plan tfjson.Plan
			require.NoError(t, json.Unmarshal([]byte(js), &plan))

			res, err := accept.Compute(accept.Request{Dir: dir, VarFiles: []string{"prod.tfvars"}, Plan: &plan})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{
				"dwtest_file.literal.content: main.tf:28 (literal)",
				"dwtest_file.local.content: main.tf:8 (local)",
				"dwtest_file.tfvars.content: prod.tfvars:2 (tfvars)",
				"dwtest_file.default.content: main.tf:17 (variable default)",
				"module.child.dwtest_file.input.content: main.tf:53 (module input)",
			}, texts(res.Accepted))
			require.Len(t, res.Refused, 1)
			require.Equal(t, "dwtest_file.secret", res.Refused[0].Address)
			require.Contains(t, res.Refused[0].Reason, "sensitive")
			patch := res.Patch()
			require.NotContains(t, patch, "canary")
			require.NotContains(t, res.Refused[0].String(), "canary")

			// The proof: without the sensitive one, the changed code plans
			// no change.
			require.NoError(t, res.Apply())
			require.NoError(t, os.WriteFile(filepath.Join(dir, "out", "secret.txt"), []byte("canary-secret-0"), 0o644))
			code, out := tf(t, bin, cli, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-var-file=prod.tfvars")
			require.Equal(t, 0, code, "the accepted code still plans changes:\n%s\n%s", out, patch)
			require.Contains(t, mustRead(t, filepath.Join(dir, "main.tf")), `greeting = "changed by hand: local" # from a local`)
			require.True(t, strings.HasPrefix(mustRead(t, filepath.Join(dir, "prod.tfvars")), "# per environment\n"))
		})
	}
}

// With real Terraform and OpenTofu: a resource deleted outside Terraform
// is refused unless deletions are asked for; asked, its block becomes a
// removed block, and the plan of the changed code (which the proof
// reads) creates nothing: Terraform plans a forget of the address (the
// state entry goes on apply, nothing in the world), OpenTofu nothing at
// all. Applied, the next plan is clean and the object stays gone.
func TestAcceptDeletionProvenByAPlan(t *testing.T) {
	bins, cli := tftest.Tools(t)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
			main := `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}

resource "dwtest_file" "keep" {
  filename = "${path.module}/out/keep.txt"
  content  = "k"
}

# deleted by hand
resource "dwtest_file" "gone" {
  filename = "${path.module}/out/gone.txt"
  content  = "g"
}
`
			require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644))
			tf(t, bin, cli, dir, "init", "-input=false", "-no-color")
			tf(t, bin, cli, dir, "apply", "-auto-approve", "-input=false", "-no-color")
			require.NoError(t, os.Remove(filepath.Join(dir, "out", "gone.txt")))
			plan := showPlan(t, bin, cli, dir, 2)
			require.Equal(t, tfjson.Actions{tfjson.ActionCreate}, changeOf(plan, "dwtest_file.gone"))

			res, err := accept.Compute(accept.Request{Dir: dir, Plan: plan, Tool: filepath.Base(bin)})
			require.NoError(t, err)
			require.Empty(t, res.Files)
			require.Len(t, res.Refused, 1)
			require.Contains(t, res.Refused[0].Reason, "made only on request (driftwatch accept --deletions")

			// The version comes from the plan (terraform_version).
			res, err = accept.Compute(accept.Request{Dir: dir, Plan: plan, Tool: filepath.Base(bin), Deletions: true})
			require.NoError(t, err)
			require.Empty(t, res.Refused)
			require.Equal(t, []string{"dwtest_file.gone: main.tf:13 (removed block)"}, texts(res.Accepted))
			require.NoError(t, res.Apply())
			require.Equal(t, strings.Replace(main, `resource "dwtest_file" "gone" {
  filename = "${path.module}/out/gone.txt"
  content  = "g"
}`, "removed {\n  from = dwtest_file.gone\n\n  lifecycle {\n    destroy = false\n  }\n}", 1), mustRead(t, filepath.Join(dir, "main.tf")))

			// What the proof sees.
			want, wantCode := tfjson.Actions(nil), 0
			if sandbox.ToolName(bin) == "terraform" {
				want, wantCode = tfjson.Actions{tfjson.ActionForget}, 2
			}
			proof := showPlan(t, bin, cli, dir, wantCode)
			require.Equal(t, want, changeOf(proof, "dwtest_file.gone"))
			require.Equal(t, tfjson.Actions{tfjson.ActionNoop}, changeOf(proof, "dwtest_file.keep"))

			// Applied: the state forgets it; nothing is created.
			tf(t, bin, cli, dir, "apply", "-auto-approve", "-input=false", "-no-color")
			code, out := tf(t, bin, cli, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode")
			require.Equal(t, 0, code, out)
			_, state := tf(t, bin, cli, dir, "state", "list")
			require.Equal(t, "dwtest_file.keep\n", state)
			require.NoFileExists(t, filepath.Join(dir, "out", "gone.txt"))
		})
	}
}

// showPlan plans dir, wanting exit code code, and reads the plan.
func showPlan(t *testing.T, bin, cli, dir string, code int) *tfjson.Plan {
	t.Helper()
	got, out := tf(t, bin, cli, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-out=show.tfplan")
	require.Equal(t, code, got, out)
	_, js := tf(t, bin, cli, dir, "show", "-json", "show.tfplan")
	var plan tfjson.Plan
	require.NoError(t, json.Unmarshal([]byte(js), &plan))
	return &plan
}

// changeOf is the planned actions of address (nil: not in the plan).
func changeOf(p *tfjson.Plan, address string) tfjson.Actions {
	for _, rc := range p.ResourceChanges {
		if rc.Address == address {
			return rc.Change.Actions
		}
	}
	return nil
}
