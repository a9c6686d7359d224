package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

func TestDiagnostic(t *testing.T) {
	cases := map[string]struct{ stderr, want string }{
		"with location":                      {"\nError: Unsupported argument\n\n  on main.tf line 4, in resource \"x\" \"y\":\n   4:   password = \"hunter2\"\n\nAn argument named...\n", "Error: Unsupported argument (main.tf line 4)"},
		"no location":                        {"Error: Failed to query available provider packages\n\nCould not retrieve...\n", "Error: Failed to query available provider packages"},
		"two errors":                         {"Error: A\n\n  on a.tf line 1:\n\nError: B\n", "Error: A (a.tf line 1) (and 1 more error)"},
		"location belongs to the next error": {"Error: A\n\nError: B\n  on b.tf line 2:\n", "Error: A (and 1 more error)"},
		"boxed (tofu)":                       {"│ Error: Invalid reference\n│ \n│   on main.tf line 7:\n", "Error: Invalid reference (main.tf line 7)"},
		"no diagnostics":                     {"something else", "exit status 1"},
		"init's preamble to an invalid configuration": {"\nError: Terraform encountered problems during initialisation, including problems\nwith the configuration, described below.\n\nThe Terraform configuration must be valid before initialization so that\nTerraform can determine which modules and providers need to be installed.\n\n\nError: Unclosed configuration block\n\n  on main.tf line 2, in resource \"terraform_data\" \"x\":\n   2: resource \"terraform_data\" \"x\" {\n\nThere is no closing brace for this block.\n\nError: Invalid expression\n\n  on other.tf line 5:\n", "Error: Unclosed configuration block (main.tf line 2) (and 1 more error)"},
		"OpenTofu's, boxed":                           {"╷\n│ Error: OpenTofu encountered problems during initialisation, including problems\n│ with the configuration, described below.\n╵\n╷\n│ Error: Unclosed configuration block\n│ \n│   on main.tf line 2, in resource \"terraform_data\" \"x\":\n", "Error: Unclosed configuration block (main.tf line 2)"},
		"the preamble alone":                          {"Error: Terraform encountered problems during initialization\n", "Error: Terraform encountered problems during initialization"},
		"three errors":                                {"Error: A\nError: B\nError: C\n", "Error: A (and 2 more errors)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := Diagnostic(c.stderr, errors.New("exit status 1\nstuff"))
			require.Equal(t, c.want, got)
			require.NotContains(t, got, "hunter2", "source snippets are never quoted")
		})
	}
}

func TestResolveBinary(t *testing.T) {
	dir := t.TempDir()
	tofu := filepath.Join(dir, "tofu")
	require.NoError(t, os.WriteFile(tofu, []byte("#!/bin/sh\n"), 0o755))
	got, err := ResolveBinary("", dir)
	require.NoError(t, err, "falls back to tofu when terraform is absent")
	require.Equal(t, tofu, got)
	_, err = ResolveBinary("terraform", dir)
	require.EqualError(t, err, "terraform not found on PATH")
}

func TestNewDirRefusesLongPaths(t *testing.T) {
	short := t.TempDir()
	if len(short) > 40 {
		short = os.TempDir()
	}
	d, err := NewDir(short, "dw-", "")
	require.NoError(t, err)
	fi, err := os.Stat(d)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.NoError(t, os.RemoveAll(d))

	long := filepath.Join(t.TempDir(), strings.Repeat("x", 100))
	_, err = NewDir(long, "dw-", "")
	require.ErrorContains(t, err, "set terraform.work_dir to a shorter path")
}

func TestRedactor(t *testing.T) {
	r := NewRedactor([]string{"abc", "s3cr3t", "s3cr3t-longer"})
	require.Equal(t, "x [REDACTED] [REDACTED] abc", r.Apply("x s3cr3t-longer s3cr3t abc"))

	// A multi-line secret is matched whole and, since logs are redacted
	// line by line, each of its lines alone too (short lines excepted).
	pem := "-----BEGIN KEY-----\nMIIEvQIBADANBgkq\nab\n-----END KEY-----\n"
	r = NewRedactor([]string{pem})
	require.Equal(t, "[REDACTED]", r.Apply(pem))
	require.Equal(t, "key: [REDACTED] ab", r.Apply("key: MIIEvQIBADANBgkq ab"))
}

func TestTail(t *testing.T) {
	tl := NewTail(5)
	_, _ = tl.Write([]byte("hello world"))
	require.Equal(t, "world", tl.String())
	tl.Reset()
	require.Empty(t, tl.String())
}

func TestDiagnosticWithResource(t *testing.T) {
	applyErr := `dwtest_file.b: Creating...

Error: Cannot write file

  with dwtest_file.b,
  on main.tf line 11, in resource "dwtest_file" "b":
  11: resource "dwtest_file" "b" {

mkdir /tmp/out/sub: file exists
`
	boxed := "╷\n│ Error: Invalid reference\n│ \n│   on main.tf line 3:\n│    3:   x = secret-canary\n╵\n╷\n│ Error: Second\n╵\n"
	cases := map[string]struct {
		stderr string
		err    error
		want   string
	}{
		"apply error with resource and location": {stderr: applyErr, want: "Error: Cannot write file (dwtest_file.b, main.tf line 11)"},
		"boxed, several errors":                  {stderr: boxed, want: "Error: Invalid reference (main.tf line 3) (and 1 more error)"},
		"location of a later error is not taken": {stderr: "Error: First\n\nError: Second\n  on b.tf line 2:\n", want: "Error: First (and 1 more error)"},
		"no diagnostic":                          {stderr: "something odd", err: errors.New("exit status 1\nmore"), want: "exit status 1"},
		"nothing at all":                         {want: "failed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Diagnostic(tc.stderr, tc.err)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "canary")
		})
	}
}

func TestBuildEnvIsScrubbed(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "daemon-canary")
	t.Setenv("TF_CLI_ARGS_plan", "-lock=false")
	dir := t.TempDir()
	secret := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(secret, []byte("s3cr3t-token\n"), 0o600))
	req := terraform.Request{
		Env:            map[string]string{"APP_MODE": "prod"},
		SecretEnvFiles: map[string]string{"APP_TOKEN": secret},
		CLIConfigFile:  "/etc/tfrc",
		PluginCacheDir: filepath.Join(dir, "cache"),
	}
	env, secrets, err := BuildEnv(req, dir, "m1")
	require.NoError(t, err)
	require.Equal(t, []string{"s3cr3t-token"}, secrets)
	require.Equal(t, map[string]string{
		"APP_MODE":           "prod",
		"APP_TOKEN":          "s3cr3t-token",
		"PATH":               os.Getenv("PATH"),
		"HOME":               filepath.Join(dir, "home"),
		"TMPDIR":             dir,
		"CHECKPOINT_DISABLE": "1",
		MarkerEnv:            "m1",
		"TF_CLI_CONFIG_FILE": "/etc/tfrc",
	}, env)
	list := EnvList(env)
	require.Contains(t, list, "TF_IN_AUTOMATION=1")
	require.NotContains(t, strings.Join(list, "\n"), "daemon-canary")

	_, _, err = BuildEnv(terraform.Request{SecretEnvFiles: map[string]string{"GONE": filepath.Join(dir, "missing")}}, t.TempDir(), "m")
	require.ErrorContains(t, err, "secret_env_files GONE")
}

// nilErr mimics tfexec's cmdErr after a cancelled command: an
// error whose Error method panics on a nil field.
type nilErr struct{ err error }

func (e nilErr) Error() string        { return e.err.Error() }
func (e nilErr) Is(target error) bool { return target == context.Canceled }

func TestErrorTextSurvivesPanickingErrors(t *testing.T) {
	require.Equal(t, "terraform stopped: context canceled", ErrorText(nilErr{}))
	require.Equal(t, "terraform stopped: context canceled", Diagnostic("", nilErr{}))
	require.Equal(t, "boom", ErrorText(errors.New("boom")))
	require.Empty(t, ErrorText(nil))
}

// A restarted daemon removes exactly its killed predecessor's run
// directories: another owner's, and other files, stay.
func TestSweepOwnedDirs(t *testing.T) {
	base := t.TempDir()
	mine1, err := NewDir(base, "dw-", "dw-owner-a")
	require.NoError(t, err)
	mine2, err := NewDir(base, "dwr-", "dw-owner-a")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mine1, "driftwatch-vars.tfvars.json"), []byte(`{"pw":"x"}`), 0o600))
	theirs, err := NewDir(base, "dw-", "dw-owner-b")
	require.NoError(t, err)
	unowned, err := NewDir(base, "dw-", "")
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(base, "unrelated"), 0o700))

	require.Equal(t, 2, SweepOwnedDirs(base, "dw-owner-a"))
	for _, d := range []string{mine1, mine2} {
		_, err := os.Stat(d)
		require.True(t, os.IsNotExist(err), d)
	}
	for _, d := range []string{theirs, unowned, filepath.Join(base, "unrelated")} {
		require.DirExists(t, d)
	}
	require.Zero(t, SweepOwnedDirs(base, ""), "no owner: nothing")
}
