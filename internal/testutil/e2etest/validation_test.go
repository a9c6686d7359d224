package e2etest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

const canaryCheck = "CANARY-check-secret-9e41b7"

// validationReport is the part of the JSON report (version 2) these tests
// read.
type validationReport struct {
	Version int `json:"version"`
	Summary struct {
		Validation, Errored, Clean int
	} `json:"summary"`
	Workspaces []struct {
		Name     string          `json:"name"`
		Status   drift.Status    `json:"status"`
		Error    string          `json:"error"`
		Findings []drift.Finding `json:"findings"`
	} `json:"workspaces"`
}

func (r validationReport) ws(t *testing.T, name string) (drift.Status, string, []drift.Finding) {
	t.Helper()
	for _, w := range r.Workspaces {
		if w.Name == name {
			return w.Status, w.Error, counted(w.Findings)
		}
	}
	t.Fatalf("workspace %q not in report", name)
	return "", "", nil
}

// TestAuditValidation audits real configurations with checks, with
// Terraform and OpenTofu: a failing check block on a plan with no change
// is a check finding and status validation (exit 2), the same with the
// fast paths on and off, and clean once the check passes; a failing
// postcondition fails the plan, so the run is errored and its reason
// names the condition and its message, as does a failed variable
// validation's; a check in a module has its module path; a check whose
// nested data source
// fails is errored, not validation; a secret interpolated into a check's
// message is redacted everywhere.
func TestAuditValidation(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		health := e.workspace(t, "health", map[string]string{
			"main.tf": `
variable "n" { type = number }
resource "terraform_data" "x" { input = "a" }
check "health" {
  assert {
    condition     = var.n > 7
    error_message = "n is ${var.n}, want more than 7"
  }
}
module "m" {
  source = "./m"
  n      = var.n
}
`,
			"m/main.tf": `
variable "n" { type = number }
check "inner" {
  assert {
    condition     = var.n != 5
    error_message = "n must not be 5"
  }
}
`,
			"n.tfvars": "n = 5\n",
		})
		e.apply(t, health, "-var-file=n.tfvars")

		post := e.workspace(t, "post", map[string]string{
			"main.tf": `
variable "want" { type = string }
resource "terraform_data" "x" {
  input = "a"
  lifecycle {
    postcondition {
      condition     = self.input == var.want
      error_message = "input is not ${var.want}"
    }
  }
}
`,
			"want.tfvars": "want = \"a\"\n",
		})
		e.apply(t, post, "-var-file=want.tfvars")
		require.NoError(t, os.WriteFile(filepath.Join(post, "want.tfvars"), []byte("want = \"b\"\n"), 0o644))

		dserr := e.workspace(t, "dserr", map[string]string{"main.tf": providers + `
resource "terraform_data" "x" { input = "a" }
check "ds" {
  data "dwtest_file" "f" {
    filename = "@ROOT@/missing.txt"
  }
  assert {
    condition     = data.dwtest_file.f.content == "x"
    error_message = "content is not x"
  }
}
`})
		e.apply(t, dserr)

		// The check's message interpolates a file's content that is also a
		// secret env value of the workspace: the redactor knows it.
		varval := e.workspace(t, "varval", map[string]string{"main.tf": `
variable "size" {
  type    = number
  default = 3
  validation {
    condition     = var.size < 10
    error_message = "size must be < 10, is ${var.size}."
  }
}
resource "terraform_data" "x" { input = var.size }
`})
		e.apply(t, varval)
		require.NoError(t, os.WriteFile(filepath.Join(varval, "size.tfvars"), []byte("size = 12\n"), 0o644))

		// Invalid HCL: init's preamble is not the reason, the diagnostic is.
		e.workspace(t, "broken", map[string]string{"main.tf": "terraform {}\n\nresource \"terraform_data\" \"x\" {\n  input = \"a\"\n"})

		secret := e.workspace(t, "secret", map[string]string{
			"main.tf": providers + `
data "dwtest_file" "tok" { filename = "@ROOT@/secret/token" }
resource "terraform_data" "x" { input = "a" }
check "token" {
  assert {
    condition     = length(trimspace(data.dwtest_file.tok.content)) < 5
    error_message = "token ${trimspace(data.dwtest_file.tok.content)} is too long"
  }
}
`,
			"token": canaryCheck + "\n",
		})
		e.apply(t, secret)

		workspaces := `
workspaces:
  - name: health
    source: { path: ./health }
    var_files: [n.tfvars]
  - name: post
    source: { path: ./post }
    var_files: [want.tfvars]
  - name: dserr
    source: { path: ./dserr }
  - name: varval
    source: { path: ./varval }
    var_files: [size.tfvars]
  - name: varinv
    source: { path: ./varval }
    vars: { size: "13" }
  - name: broken
    source: { path: ./broken }
  - name: secret
    source: { path: ./secret }
    secret_env_files: { APP_TOKEN: ./secret/token }
`
		audit := func(t *testing.T, fast bool, ws ...string) (runOut, validationReport) {
			t.Helper()
			e.fastPathsOff = !fast
			cfg := e.config(t, workspaces)
			args := []string{"audit", "--config", cfg, "--format", "json", "--log-level", "debug"}
			for _, w := range ws {
				args = append(args, "--workspace", w)
			}
			r := driftwatch(t, nil, args...)
			var rep validationReport
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout+r.stderr)
			require.Equal(t, 2, rep.Version)
			return r, rep
		}

		var findings [2][]drift.Finding
		for i, fast := range []bool{true, false} {
			r, rep := audit(t, fast, "health")
			require.Equal(t, 2, r.code, "a failing check exits 2 (fast paths %v)\n%s", fast, r.stderr)
			st, msg, fs := rep.ws(t, "health")
			require.Equal(t, drift.StatusValidation, st, msg)
			require.Equal(t, 1, rep.Summary.Validation)
			require.Equal(t, []drift.Finding{
				{Kind: drift.KindCheck, Address: "check.health", Type: "check", Action: "fail", Attributes: []string{}, Detail: "n is 5, want more than 7"},
				{Kind: drift.KindCheck, Address: "module.m.check.inner", Type: "check", Action: "fail", Attributes: []string{}, Detail: "n must not be 5"},
			}, fs)
			findings[i] = fs
		}
		require.Equal(t, findings[0], findings[1], "fast paths on and off agree")

		require.NoError(t, os.WriteFile(filepath.Join(health, "n.tfvars"), []byte("n = 9\n"), 0o644))
		for _, fast := range []bool{true, false} {
			r, rep := audit(t, fast, "health")
			require.Equal(t, 0, r.code, r.stderr)
			st, msg, fs := rep.ws(t, "health")
			require.Equal(t, drift.StatusClean, st, msg)
			require.Empty(t, fs)
		}

		r, rep := audit(t, true, "post", "dserr", "varval", "varinv", "broken", "secret")
		require.Equal(t, 1, r.code, r.stderr)

		st, msg, _ := rep.ws(t, "post")
		require.Equal(t, drift.StatusErrored, st, "a failed postcondition fails the plan")
		require.Contains(t, msg, "Resource postcondition failed (terraform_data.x")
		require.Contains(t, msg, "input is not b")

		st, msg, _ = rep.ws(t, "dserr")
		require.Equal(t, drift.StatusErrored, st, "a check whose data source failed is errored, not validation")
		require.Contains(t, msg, "check.ds could not be evaluated: a data source in it failed")

		st, msg, _ = rep.ws(t, "varval")
		require.Equal(t, drift.StatusErrored, st, "a failed variable validation fails the plan")
		require.Contains(t, msg, "Invalid value for variable")
		require.Contains(t, msg, "size must be < 10, is 12.")
		require.NotContains(t, msg, "This was checked by")
		require.Contains(t, msg, "(var.size, ", "the variable is named")
		if sandbox.ToolName(e.bin) == "terraform" {
			require.Contains(t, msg, "(var.size, size.tfvars line 1)", "the var file, relative to the module")
		}
		require.NotContains(t, msg, "/", "no path of the run's copy of the source")

		st, msg, _ = rep.ws(t, "varinv")
		require.Equal(t, drift.StatusErrored, st)
		require.Contains(t, msg, "Invalid value for variable (var.size, from the inventory's vars): size must be < 10, is 13.")
		require.NotContains(t, msg, "driftwatch-vars", "not the run's own var file")

		st, msg, _ = rep.ws(t, "broken")
		require.Equal(t, drift.StatusErrored, st)
		require.Equal(t, "init: Error: Unclosed configuration block (main.tf line 3)", msg, "the diagnostic, not init's preamble")

		st, msg, fs := rep.ws(t, "secret")
		require.Equal(t, drift.StatusValidation, st, msg)
		require.Len(t, fs, 1)
		require.Equal(t, "check.token", fs[0].Address)
		require.Equal(t, "token [REDACTED] is too long", fs[0].Detail)
		for _, format := range []string{"json", "table", "markdown", "junit", "sarif"} {
			out := driftwatch(t, nil, "audit", "--config", e.config(t, workspaces), "--workspace", "secret", "--format", format, "--log-level", "debug")
			require.Equal(t, 2, out.code, out.stderr)
			require.Contains(t, out.stdout, "check.token", format)
			require.NotContains(t, out.stdout+out.stderr, canaryCheck, "%s: the secret leaked:\n%s\n%s", format, out.stdout, out.stderr)
		}
	})
}
