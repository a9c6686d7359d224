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
