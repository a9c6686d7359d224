package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

const (
	varCanary = "CANARY-var-7f3a9c"
	envCanary = "CANARY-env-b41d02"
)

func TestRunLogRealTerraform(t *testing.T) {
	bins, cli := tftest.Tools(t)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			t.Parallel()
			t.Run("redacted", func(t *testing.T) {
				src := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(`
variable "token" { type = string }
variable "pw" {
  type      = string
  sensitive = true
}
resource "terraform_data" "pw" { input = var.pw }
resource "terraform_data" "x" {
  # The env canary is written literally: Terraform reads no arbitrary env
  # var, and whatever prints a secret env value (a provider's error, say),
  # the redactor matches the value, not its source.
  input = "token=${var.token} env=`+envCanary+` plain=visible-value"
}
`), 0o644))
				// pw is sensitive: Terraform shows "(sensitive value)", and
				// driftwatch would redact the value if anything printed it.
				require.NoError(t, os.WriteFile(filepath.Join(src, "secret.tfvars"), []byte(`pw = "CANARY-sensitive-5e6f"`), 0o644))
				secret := filepath.Join(t.TempDir(), "secret")
				require.NoError(t, os.WriteFile(secret, []byte(envCanary+"\n"), 0o600))
				l := runlog.New(1<<20, nil)
				req := terraform.Request{RunID: "r1", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src},
					WorkDir: t.TempDir(), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli,
					Vars:           map[string]string{"token": varCanary},
					VarFiles:       []string{"secret.tfvars"},
					SecretEnvFiles: map[string]string{"DW_TEST_SECRET": secret},
					Log:            l}
				res, err := testRunner().Run(t.Context(), req)
				require.NoError(t, err)
				require.Equal(t, 2, res.ExitCode)
				l.Close("pending")
				log := string(l.Bytes())
				t.Log(log)
				for _, h := range []string{"== init ==", "== plan ==", "== changes =="} {
					require.Contains(t, log, h+"\n")
				}
				require.NotContains(t, log, "== show ==", "the plan is read from the plan file: no show -json")
				require.Less(t, strings.Index(log, "== init =="), strings.Index(log, "== plan =="))
				require.False(t, runlog.HoldsValues(l.Bytes()))
				// Addresses and actions, never an attribute value, even one
				// that is not sensitive.
				require.Contains(t, log, "plan   +   create  terraform_data.x")
				require.Contains(t, log, "Plan: 2 to add, 0 to change, 0 to destroy.")
				require.NotContains(t, log, "visible-value")
				require.NotContains(t, log, "CANARY")
				require.NotContains(t, log, "format_version", "show -json output never reaches the log")
				require.NotContains(t, log, "\x1b[", "-no-color")

				// Opted in (log_plan_text), the full plan text follows,
				// values included (behind the notice the log's owner
				// writes first); secrets still redacted.
				req.LogPlanText, req.RunID = true, "r1b"
				l = runlog.New(1<<20, nil)
				l.Printf("%s", runlog.ValuesNotice)
				req.Log = l
				_, err = testRunner().Run(t.Context(), req)
				require.NoError(t, err)
				l.Close("pending")
				log = string(l.Bytes())
				t.Log(log)
				require.Contains(t, log, "== plan text ==\n")
				require.Contains(t, log, "terraform_data.x will be created")
				require.Contains(t, log, "token=[REDACTED] env=[REDACTED] plain=visible-value")
				require.Contains(t, log, "(sensitive value)")
				require.NotContains(t, log, "CANARY")
			})
			t.Run("sensitive-varfile", func(t *testing.T) {
				// Terraform hides a sensitive variable in its own output,
				// but a provider's error message prints it verbatim.
				src := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(`
variable "pw" {
  type      = string
  sensitive = true
}
variable "nested" {
  type      = map(list(string))
  sensitive = true
}
variable "plain" { type = string }
data "local_file" "x" {
  filename = "/nonexistent-dw/${var.pw}/${var.nested["k"][0]}/${var.plain}"
}
`), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(src, "secret.tfvars"), []byte(`pw = "CANARY-file-5e6f"`+"\nplain = \"visible-plain\"\n"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(src, "x.auto.tfvars.json"), []byte(`{"nested": {"k": ["CANARY-auto-91ab"]}}`), 0o644))
				l := runlog.New(1<<20, nil)
				req := terraform.Request{RunID: "r3", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src},
					WorkDir: t.TempDir(), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli,
					VarFiles: []string{"secret.tfvars"}, Log: l}
				_, err := testRunner().Run(t.Context(), req)
				require.Error(t, err)
				l.Close("errored")
				log := string(l.Bytes())
				t.Log(log)
				require.Contains(t, log, "/nonexistent-dw/[REDACTED]/[REDACTED]/visible-plain", "the provider's error, redacted")
				require.NotContains(t, log, "CANARY")
				require.NotContains(t, err.Error(), "CANARY")
				var re *terraform.Error
				require.ErrorAs(t, err, &re)
				require.NotContains(t, re.Reason, "CANARY")
			})
			t.Run("failing", func(t *testing.T) {
				src := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(`
resource "terraform_data" "x" {
  bogus = 1
}
`), 0o644))
				l := runlog.New(1<<20, nil)
				req := terraform.Request{RunID: "r2", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src},
					WorkDir: t.TempDir(), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli, Log: l}
				_, err := testRunner().Run(t.Context(), req)
				require.Error(t, err)
				l.Close("errored")
				log := string(l.Bytes())
				t.Log(log)
				require.Contains(t, log, "Error: Unsupported argument")
				require.Contains(t, log, "main.tf line 3")
			})
		})
	}
}
