package tfsession

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Canaries: one secret of each kind Prepare redacts.
const (
	daemonCanary = "DAEMON-CANARY-d41"  // terraform.Request.Redact
	configCanary = "CONFIG-CANARY-c07"  // a backend_config key=value
	fileCanary   = "CFGFILE-CANARY-f19" // a value in a backend_config file
	envCanary    = "ENV-CANARY-e23"     // a secret_env_files value
	varCanary    = "VAR-CANARY-v58"     // a variable declared sensitive
)

// prepareRequest is a request for a path source whose module declares a
// sensitive variable and holds a backend_config file, carrying every
// canary, with run directories under its own work dir.
func prepareRequest(t *testing.T) terraform.Request {
	t.Helper()
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(`variable "pw" {
  sensitive = true
}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "backend.hcl"), []byte(`password = "`+fileCanary+`"`+"\n"), 0o644))
	secretFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(secretFile, []byte(envCanary+"\n"), 0o600))
	bin := filepath.Join(t.TempDir(), "terraform")
	writeScript(t, bin, "exit 0")
	return terraform.Request{
		RunID: "run-1", Workspace: "ws", Binary: bin, Owner: "daemon-a",
		Source:         terraform.Source{Path: src},
		Vars:           map[string]string{"pw": varCanary},
		SecretEnvFiles: map[string]string{"TF_TOKEN": secretFile},
		BackendConfig:  []string{"token=" + configCanary, "backend.hcl"},
		Redact:         []string{daemonCanary},
		WorkDir:        t.TempDir(),
	}
}

// Prepare sets a run up in a fresh 0700 run directory (the code copied
// in, the environment scrubbed, every kind of secret known to its
// redactor, the session open) and Close leaves nothing behind.
func TestPrepare(t *testing.T) {
	req := prepareRequest(t)
	var phases []drift.Phase
	var sourced []Prepared
	p, err := Prepare(t.Context(), PrepareOptions{
		Options:   Options{Request: req, Grace: time.Second, Phases: NewPhases(&phases)},
		DirPrefix: sandbox.ApplyDirPrefix, Marker: "m-1",
		Sourced: func(p *Prepared) { sourced = append(sourced, *p) },
	})
	require.NoError(t, err)

	require.Equal(t, req.WorkDir, filepath.Dir(p.Dir))
	require.True(t, strings.HasPrefix(filepath.Base(p.Dir), sandbox.ApplyDirPrefix), p.Dir)
	st, err := os.Stat(p.Dir)
	require.NoError(t, err)
	require.Equal(t, fs.ModeDir|0o700, st.Mode())
	require.Equal(t, sandbox.SourceDir(p.Dir), p.ModuleDir)
	require.FileExists(t, filepath.Join(p.ModuleDir, "main.tf"))
	require.Empty(t, p.Commit, "a path source has no commit")

	require.Equal(t, p.Dir, p.Env["TMPDIR"])
	require.Equal(t, "m-1", p.Env[sandbox.MarkerEnv])
	require.Equal(t, envCanary, p.Env["TF_TOKEN"])
	require.NotContains(t, p.Env, "GOPATH", "nothing else of the daemon's environment")

	all := strings.Join([]string{daemonCanary, configCanary, fileCanary, envCanary, varCanary}, " ")
	for _, c := range strings.Fields(all) {
		require.Contains(t, p.Secrets, c)
	}
	require.Equal(t, strings.Repeat("[REDACTED] ", 4)+"[REDACTED]", p.Redactor.Apply(all))

	require.Len(t, sourced, 1)
	require.Nil(t, sourced[0].Session, "Sourced runs before the session opens")
	require.Equal(t, p.ModuleDir, sourced[0].ModuleDir)
	require.NotNil(t, p.Session)
	require.Equal(t, req.Binary, p.Session.Binary())
	require.Len(t, phases, 1)
	require.Equal(t, "source", phases[0].Name)

	p.Close()
	require.NoDirExists(t, p.Dir)
	left, err := os.ReadDir(req.WorkDir)
	require.NoError(t, err)
	require.Empty(t, left)
}

// A failed Prepare names its phase, wraps its cause, redacts every
// secret known when it failed from its reason, and removes the run
// directory.
func TestPrepareFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		phase string
		// edit breaks the request so that its error names canary.
		edit   func(r *terraform.Request)
		canary string
		cause  error
	}{
		{
			name: "run directory", phase: "setup", canary: daemonCanary,
			edit: func(r *terraform.Request) {
				r.WorkDir = filepath.Join(r.WorkDir, strings.Repeat("w", 80), daemonCanary)
			},
		},
		{
			name: "environment", phase: "setup", canary: configCanary, cause: fs.ErrNotExist,
			edit: func(r *terraform.Request) {
				r.SecretEnvFiles = map[string]string{"TF_TOKEN": filepath.Join(r.WorkDir, "gone", configCanary)}
			},
		},
		{
			name: "source", phase: "source", canary: envCanary, cause: fs.ErrNotExist,
			edit: func(r *terraform.Request) { r.Source.Path = filepath.Join(r.Source.Path, envCanary) },
		},
		{
			name: "session", phase: "setup", canary: varCanary,
			edit: func(r *terraform.Request) { r.Binary = "terraform-" + varCanary },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := prepareRequest(t)
			base := req.WorkDir
			tc.edit(&req)
			p, err := Prepare(t.Context(), PrepareOptions{
				Options: Options{Request: req, Grace: time.Second}, DirPrefix: sandbox.DetectDirPrefix, Marker: "m-1",
			})
			require.Nil(t, p)
			var re *terraform.Error
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.phase, re.Phase)
			require.NotContains(t, err.Error(), tc.canary)
			require.Contains(t, err.Error(), "[REDACTED]")
			if tc.cause != nil {
				require.ErrorIs(t, err, tc.cause)
			}
			// Nothing left but what the request itself names.
			err = filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
				require.NoError(t, err)
				require.False(t, strings.HasPrefix(d.Name(), sandbox.DetectDirPrefix), "run directory %s left behind", path)
				return nil
			})
			require.NoError(t, err)
		})
	}
}
