package local

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// fakeTerraform writes a shell script that answers `version -json` and
// runs body for every other command. It stands in for Terraform only in the
// fault cases real Terraform cannot produce on demand (a process that
// ignores SIGINT, a grandchild holding the pipes); the happy path is tested
// with real Terraform in internal/testutil/e2etest.
func fakeTerraform(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "terraform")
	script := "#!/bin/sh\ncase \"$1\" in version) echo '{\"terraform_version\":\"1.11.4\",\"platform\":\"linux_amd64\",\"provider_selections\":{},\"terraform_outdated\":false}'; exit 0;; esac\n" + body + "\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

func newReq(t *testing.T, bin string) terraform.Request {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), nil, 0o644))
	return terraform.Request{RunID: "r1", Workspace: "ws", Binary: bin, Source: terraform.Source{Path: src},
		WorkDir: t.TempDir(), Timeout: time.Minute, KillGrace: time.Second}
}

func testRunner() *Runner { return New(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))) }

// A Terraform that ignores SIGINT and leaves a grandchild holding its
// output pipes is still stopped at the timeout, and nothing survives.
func TestTimeoutKillsEverything(t *testing.T) {
	bin := fakeTerraform(t, `trap '' INT
sleep 3141 &
sleep 3142`)
	req := newReq(t, bin)
	req.Timeout = time.Second
	start := time.Now()
	_, err := testRunner().Run(t.Context(), req)
	elapsed := time.Since(start)

	require.Error(t, err)
	require.ErrorIs(t, err, terraform.ErrTimeout)
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "init", re.Phase)
	require.Contains(t, re.Error(), "timed out after 1s")
	require.Less(t, elapsed, 20*time.Second)
	// Killed processes can take a moment to be reaped under load.
	require.Eventually(t, func() bool { return len(findProcs(t, "3141", "3142")) == 0 }, 5*time.Second, 50*time.Millisecond,
		"no process of the run survives it: %v", findProcs(t, "3141", "3142"))
	entries, _ := os.ReadDir(req.WorkDir)
	require.Empty(t, entries, "the run directory is removed")
}

func findProcs(t *testing.T, args ...string) []string {
	t.Helper()
	var found []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		for _, a := range args {
			if strings.HasPrefix(cmd, "sleep "+a) {
				found = append(found, p.Name()+": "+cmd)
			}
		}
	}
	return found
}

// The child sees only PATH, HOME (in the run dir), what driftwatch sets and
// the workspace's own env and secrets; nothing else of the parent leaks.
func TestScrubbedEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "parent-secret-must-not-leak")
	t.Setenv("TF_VAR_x", "parent-var")
	out := filepath.Join(t.TempDir(), "env.txt")
	bin := fakeTerraform(t, `env > "$ENV_OUT"; echo 'Error: Invalid provider configuration' >&2; exit 1`)
	secretFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(secretFile, []byte("s3cr3t-token-value\n"), 0o600))

	req := newReq(t, bin)
	req.Env = map[string]string{"ENV_OUT": out, "AWS_REGION": "eu-west-1"}
	req.SecretEnvFiles = map[string]string{"APP_TOKEN": secretFile}
	req.CLIConfigFile = "/etc/driftwatch.tfrc"
	_, err := testRunner().Run(t.Context(), req)
	require.Error(t, err)
	require.Equal(t, "init: Error: Invalid provider configuration", err.Error())

	b, err := os.ReadFile(out)
	require.NoError(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	require.Equal(t, "s3cr3t-token-value", env["APP_TOKEN"], "secret read from file, newline trimmed")
	require.Equal(t, "eu-west-1", env["AWS_REGION"])
	require.Equal(t, "1", env["TF_IN_AUTOMATION"])
	require.Equal(t, "1", env["CHECKPOINT_DISABLE"])
	require.Equal(t, "/etc/driftwatch.tfrc", env["TF_CLI_CONFIG_FILE"])
	require.True(t, strings.HasPrefix(env["HOME"], req.WorkDir), "HOME is inside the run dir")
	require.NotContains(t, string(b), "parent-secret-must-not-leak")
	require.NotContains(t, string(b), "parent-var")
	allowed := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "CHECKPOINT_DISABLE": true,
		"TF_IN_AUTOMATION": true, "TF_CLI_CONFIG_FILE": true, "APP_TOKEN": true, "AWS_REGION": true,
		"ENV_OUT": true, sandbox.MarkerEnv: true, "TF_APPEND_USER_AGENT": true, "PWD": true, "SHLVL": true, "_": true,
		"TF_LOG": true, "TF_LOG_CORE": true, "TF_LOG_PATH": true, "TF_LOG_PROVIDER": true}
	for k := range env {
		require.True(t, allowed[k], "unexpected variable %s in the child environment", k)
	}
}

// A secret env value echoed by Terraform into an error is redacted.
func TestSecretRedactedFromErrors(t *testing.T) {
	bin := fakeTerraform(t, `echo "Error: bad token $APP_TOKEN" >&2; exit 1`)
	secretFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(secretFile, []byte("CANARY-9f8e7d"), 0o600))
	req := newReq(t, bin)
	req.SecretEnvFiles = map[string]string{"APP_TOKEN": secretFile}
	_, err := testRunner().Run(t.Context(), req)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "CANARY-9f8e7d")
	require.Contains(t, err.Error(), "[REDACTED]")
}
