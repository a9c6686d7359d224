package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// What one workspace's code tries to read of the daemon and of another
// workspace: the API token file, another workspace's secret_env_files
// value, and the environment of a daemon process (Slack token, AWS keys)
// through /proc. tonumber() makes Terraform quote a file's content in its
// error, so a value that is readable shows in the log.
const leakTF = `
variable "token" {}
variable "other" {}
variable "environ" {}
output "leak" {
  value = [tonumber(file(var.token)), tonumber(file(var.other)), tonumber(file(var.environ))]
}
`

type leakCase struct {
	req      terraform.Request
	canaries []string
}

func leakSetup(t *testing.T, bin, cliConfig string) leakCase {
	t.Helper()
	secrets := t.TempDir()
	token := filepath.Join(secrets, "api-token")
	other := filepath.Join(secrets, "other-workspace-secret")
	require.NoError(t, os.WriteFile(token, []byte("CANARY-API-TOKEN-7f3a"), 0o600))
	require.NoError(t, os.WriteFile(other, []byte("CANARY-OTHER-WS-91c2"), 0o600))
	// A stand-in for the daemon: a process with credentials in its env.
	daemon := exec.Command("sleep", "300")
	daemon.Env = []string{"SLACK_TOKEN=CANARY-SLACK-xoxb-55d1", "AWS_SECRET_ACCESS_KEY=CANARY-AWS-0b7e"}
	require.NoError(t, daemon.Start())
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })

	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(leakTF), 0o644))
	req := terraform.Request{RunID: "r1", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src},
		Vars:          map[string]string{"token": token, "other": other, "environ": fmt.Sprintf("/proc/%d/environ", daemon.Process.Pid)},
		CLIConfigFile: cliConfig, WorkDir: shortDir(t), Timeout: 2 * time.Minute, KillGrace: 5 * time.Second}
	return leakCase{req: req, canaries: []string{"CANARY-API-TOKEN-7f3a", "CANARY-OTHER-WS-91c2", "CANARY-SLACK-xoxb-55d1", "CANARY-AWS-0b7e"}}
}

// In the jail, the workspace's code gets errors, not values; without it
// (the control), the same code reads every canary: the test can fail.
func TestJailHidesDaemonAndOtherWorkspaces(t *testing.T) {
	bins, cliConfig := tftest.Tools(t)
	bwrap, pasta := tftest.Jail(t), tftest.JailNet(t)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			t.Run("control", func(t *testing.T) {
				lc := leakSetup(t, bin, cliConfig)
				l := runlog.New(1<<20, nil)
				lc.req.Log = l
				_, err := testRunner().Run(t.Context(), lc.req)
				require.Error(t, err)
				log := string(l.Bytes())
				for _, c := range lc.canaries {
					require.Contains(t, log, c, "unjailed, the code reads it")
				}
			})
			t.Run("jailed", func(t *testing.T) {
				lc := leakSetup(t, bin, cliConfig)
				lc.req.Jail, lc.req.JailNet = bwrap, pasta
				l := runlog.New(1<<20, nil)
				lc.req.Log = l
				_, err := testRunner().Run(t.Context(), lc.req)
				var re *terraform.Error
				require.ErrorAs(t, err, &re, "%v", err)
				require.Equal(t, "plan", re.Phase, "%v\n%s", err, l.Bytes())
				log := string(l.Bytes())
				for _, c := range lc.canaries {
					require.NotContains(t, log, c)
					require.NotContains(t, re.Error(), c)
				}
				require.Equal(t, 3, strings.Count(log, "no file exists at"), "each read fails:\n%s", log)
			})
		})
	}
}

// A jailed run still does its job: init from the offline mirror, plan
// with a real provider, a clean verdict, a gracefully stopped Terraform.
func TestJailedRunPlans(t *testing.T) {
	bins, cliConfig := tftest.Tools(t)
	bwrap := tftest.Jail(t)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			src := t.TempDir()
			out := filepath.Join(src, "managed.txt")
			tf := fmt.Sprintf(`
terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
resource "local_file" "f" {
  filename = %q
  content  = "hello"
}
`, out)
			require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(tf), 0o644))
			l := runlog.New(1<<20, nil)
			req := terraform.Request{RunID: "r1", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src}, Jail: bwrap, JailNet: tftest.JailNet(t), Log: l,
				CLIConfigFile: cliConfig, WorkDir: shortDir(t), Timeout: 2 * time.Minute, KillGrace: 5 * time.Second}
			res, err := testRunner().Run(t.Context(), req)
			require.NoError(t, err, "%s", l.Bytes())
			require.Equal(t, 2, res.ExitCode)
			require.Len(t, res.Plan.Changes, 1)
			log := string(l.Bytes())
			require.Contains(t, log, "plan   +   create  local_file.f")
			require.Contains(t, log, "Plan: 1 to add, 0 to change, 0 to destroy.")
			// The jail's launcher directory goes with the run.
			entries, _ := os.ReadDir(req.WorkDir)
			require.Empty(t, entries)
		})
	}
}

// Cancelling a jailed run interrupts Terraform itself, inside the jail
// (SIGINT, so it can release a lock and save state), not only bubblewrap,
// which would die of it and take Terraform down with SIGKILL; and a
// Terraform that ignores the interrupt is killed after the grace period
// with everything it started.
func TestJailedCancelReachesTerraform(t *testing.T) {
	bwrap := tftest.Jail(t)
	for _, tc := range []struct {
		name, trap, want string
	}{
		{"graceful", `trap 'echo "fake terraform: interrupted, stopping" >&2; exit 1' INT`, "fake terraform: interrupted, stopping"},
		{"ignores SIGINT", `trap '' INT`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := fakeTerraform(t, tc.trap+`
echo "fake terraform: started" >&2
sleep 3143 &
while :; do sleep 0.1; done`)
			req := newReq(t, bin)
			req.Jail, req.JailNet, req.KillGrace = bwrap, tftest.JailNet(t), 2*time.Second
			l := runlog.New(1<<20, nil)
			req.Log = l
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := testRunner().Run(ctx, req)
				done <- err
			}()
			require.Eventually(t, func() bool { return strings.Contains(string(l.Bytes()), "fake terraform: started") },
				30*time.Second, 20*time.Millisecond, "the jailed fake starts:\n%s", l.Bytes())
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run did not end after its grace period")
			}
			require.Error(t, err)
			if tc.want != "" {
				require.Contains(t, string(l.Bytes()), tc.want, "Terraform got the interrupt")
			}
			require.Eventually(t, func() bool { return len(findProcs(t, "3143")) == 0 }, 5*time.Second, 50*time.Millisecond,
				"nothing of the jail survives: %v", findProcs(t, "3143"))
		})
	}
}
