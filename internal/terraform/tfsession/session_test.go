package tfsession

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// The fake terraform scripts below stand in for Terraform only where the
// real one cannot show what is tested (how often it was asked its
// version, which environment and lock an init ran with); Terraform's own
// behaviour is tested with real Terraform in internal/runner/local,
// internal/remediation/engine and internal/testutil/e2etest. Tests that start processes do
// not run in parallel: a script written while another goroutine forks can
// fail to execute (ETXTBSY).

// writeScript writes an executable shell script to path, atomically (a
// new file renamed over the old one, as an upgrade replaces a binary).
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	require.NoError(t, os.Rename(tmp, path))
}

// versionScript answers `version -json` with version v and appends a line
// to $VERSION_CALLS each time.
func versionScript(v string) string {
	return `case "$1" in version) echo x >> "$VERSION_CALLS"; echo '{"terraform_version":"` + v + `","platform":"linux_amd64","provider_selections":{},"terraform_outdated":false}'; exit 0;; esac`
}

// open opens a session for req in a fresh run directory, with its module
// (holding main.tf and, if lock is not empty, a .terraform.lock.hcl).
func open(t *testing.T, req terraform.Request, o Options, lock string) *Session {
	t.Helper()
	dir, err := os.MkdirTemp("", "dwts-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	module := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(module, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(module, "main.tf"), nil, 0o644))
	if lock != "" {
		require.NoError(t, os.WriteFile(filepath.Join(module, ".terraform.lock.hcl"), []byte(lock), 0o644))
	}
	env, secrets, err := sandbox.BuildEnv(req, dir, "m-"+sandbox.RandomHex(4))
	require.NoError(t, err)
	o.Request, o.Dir, o.ModuleDir, o.Env, o.Secrets = req, dir, module, env, slices.Concat(secrets, req.Redact)
	if o.Grace == 0 {
		o.Grace = time.Second
	}
	s, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// The version is asked once per binary (path and file) for all the
// sessions of a Shared; a binary replaced by an upgrade, or touched, is
// asked again; without a Shared, every time.
func TestVersionCache(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	calls := filepath.Join(dir, "calls")
	writeScript(t, bin, versionScript("1.11.4"))
	req := terraform.Request{Binary: bin, Env: map[string]string{"VERSION_CALLS": calls}}
	var shared Shared
	ctx := t.Context()

	s := open(t, req, Options{Shared: &shared}, "")
	require.Equal(t, "terraform 1.11.4", s.Version(ctx))
	require.Equal(t, "terraform 1.11.4", s.Version(ctx))
	require.Equal(t, "terraform 1.11.4", open(t, req, Options{Shared: &shared}, "").Version(ctx))
	require.Equal(t, 1, countLines(t, calls), "asked once for the process")

	require.Equal(t, "terraform 1.11.4", open(t, req, Options{}, "").Version(ctx))
	require.Equal(t, 2, countLines(t, calls), "without a Shared, asked every time")

	// An upgrade renames a new binary over the old one.
	writeScript(t, bin, versionScript("1.12.0"))
	require.Equal(t, "terraform 1.12.0", s.Version(ctx))
	require.Equal(t, "terraform 1.12.0", open(t, req, Options{Shared: &shared}, "").Version(ctx))
	require.Equal(t, 3, countLines(t, calls), "the replaced binary is asked again, once")

	// Same file, new modification time (rewritten in place).
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(bin, later, later))
	require.Equal(t, "terraform 1.12.0", s.Version(ctx))
	require.Equal(t, 4, countLines(t, calls))
	require.Equal(t, "terraform 1.12.0", s.Version(ctx))
	require.Equal(t, 4, countLines(t, calls))

	// A binary that cannot tell is named, not cached.
	tofu := filepath.Join(dir, "tofu")
	writeScript(t, tofu, `echo x >> "$VERSION_CALLS"; exit 1`)
	req.Binary = tofu
	s = open(t, req, Options{Shared: &shared}, "")
	require.Equal(t, "tofu", s.Version(ctx))
	require.Equal(t, "tofu", s.Version(ctx))
	require.Equal(t, 6, countLines(t, calls))
}

// Setup failures are *terraform.Error of phase setup, and Open leaves no
// jail directory behind.
func TestOpenSetupFailure(t *testing.T) {
	dir := t.TempDir()
	module := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(module, 0o700))
	_, err := Open(Options{Request: terraform.Request{Binary: "no-such-terraform"}, Dir: dir, ModuleDir: module, Env: map[string]string{"PATH": dir}})
	var re *terraform.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "setup", re.Phase)
	require.Equal(t, "setup: no-such-terraform not found on PATH", err.Error())

	// tfexec refuses variables it manages itself; the jail made before
	// is removed.
	bin := filepath.Join(dir, "terraform")
	writeScript(t, bin, "exit 0")
	run := filepath.Join(dir, "run")
	require.NoError(t, os.Mkdir(run, 0o700))
	_, err = Open(Options{Request: terraform.Request{Binary: bin, Jail: "/usr/bin/bwrap"}, Dir: run, ModuleDir: module, Env: map[string]string{"TF_LOG": "trace"}})
	require.ErrorAs(t, err, &re)
	require.Equal(t, "setup", re.Phase)
	require.Contains(t, err.Error(), "TF_LOG")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.Contains(t, []string{"src", "terraform", "run"}, e.Name(), "left behind")
	}
}

// A failed step is a *terraform.Error naming its phase, with the first
// diagnostic of Terraform's stderr as the reason, redacted; with
// StepDiagnostics only the step's own stderr counts.
func TestStepErrors(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	writeScript(t, bin, `case "$1" in
init) echo "Error: Failed to query available provider packages" >&2; echo "token CANARY-7e1f" >&2; exit 1;;
show) echo 'not json'; exit 0;;
workspace) echo "Error: Workspace \"prod\" doesn't exist. CANARY-7e1f" >&2; exit 1;;
esac`)
	req := terraform.Request{Binary: bin, TFWorkspace: "prod", Redact: []string{"CANARY-7e1f"}}
	for _, stepDiag := range []bool{false, true} {
		var phases []drift.Phase
		s := open(t, req, Options{StepDiagnostics: stepDiag, Phases: NewPhases(&phases)}, "")
		err := s.Init(t.Context(), InitOptions{})
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "init: Error: Failed to query available provider packages", err.Error())
		require.Equal(t, "exit status 1", re.Err.Error())
		s.Phase("init")

		err = s.WorkspaceSelect(t.Context())
		require.ErrorAs(t, err, &re)
		require.Equal(t, "workspace", re.Phase)
		if stepDiag {
			require.Equal(t, `Error: Workspace "prod" doesn't exist. [REDACTED]`, re.Reason)
		} else {
			require.Equal(t, "Error: Failed to query available provider packages (and 1 more error)", re.Reason, "the run's stderr so far")
		}
		require.NotContains(t, re.Error()+re.Err.Error(), "CANARY")

		_, err = s.Show(t.Context(), filepath.Join(dir, "none.tfplan"))
		require.ErrorAs(t, err, &re)
		require.Equal(t, "show", re.Phase)
		require.Contains(t, re.Err.Error(), "parse plan json")
		s.Phase("show")
		require.Equal(t, []string{"init", "show"}, []string{phases[0].Name, phases[1].Name})
	}
}

// The plan file is decoded only by the minor versions it was proven on
// (the whole summary equals show -json's); anything else, a newer minor
// version too, or a version that cannot be read, gets show -json.
func TestDecodable(t *testing.T) {
	for tool, want := range map[string]bool{
		"terraform 1.11.0":        true,
		"terraform 1.11.4":        true,
		"terraform 1.11.99":       true,
		"tofu 1.10.0":             true,
		"tofu 1.10.6":             true,
		"terraform 1.14.0":        true,
		"terraform 1.14.9":        true,
		"tofu 1.12.0":             true,
		"tofu 1.12.6":             true,
		"terraform 1.10.5":        false,
		"terraform 1.12.2":        false,
		"terraform 1.13.5":        false,
		"terraform 1.15.0":        false,
		"terraform 2.11.0":        false,
		"terraform 1.5.7":         false,
		"tofu 1.9.1":              false,
		"tofu 1.11.1":             false,
		"tofu 1.13.0":             false,
		"tofu 1.11.4":             false,
		"tofu 1.14.9":             false,
		"terraform 1.12.6":        false,
		"terraform 1.11.5-beta1":  false,
		"terraform 1.11.4+ent":    false,
		"tofu 1.10.0-rc1":         false,
		"terraform":               false,
		"tofu":                    false,
		"opentofu 1.10.6":         false,
		"terraform 1.10":          false,
		"terraform not-a-version": false,
		"":                        false,
	} {
		require.Equal(t, want, decodable(tool), "%q", tool)
	}
}
