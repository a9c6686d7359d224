package local

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// phaseNames lists a result's phases by name.
func phaseNames(res runner.Result) []string {
	var out []string
	for _, p := range res.Phases {
		out = append(out, p.Name)
	}
	return out
}

// shortDir is a temp dir with a short path: run directories hold the
// providers' unix sockets (sandbox.NewDir).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "dwfp")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// fixture prepares a classification case (a directory of
// internal/terraform/planparse/testdata, or of testdata/fastpath here) as
// hack/gen-fixtures.sh does: base.tf (or main.tf) applied, then mutate.sh
// run, then main.tf put in place. It returns the workspace directory
// (state included) and the directory of the managed files.
func fixture(t *testing.T, bin, cli, caseDir string) (work, files string) {
	t.Helper()
	src, err := filepath.Abs(caseDir)
	require.NoError(t, err)
	root := shortDir(t)
	work, files = filepath.Join(root, "work"), filepath.Join(root, "files")
	require.NoError(t, os.MkdirAll(files, 0o755))
	out, err := exec.Command("cp", "-r", src, work).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, f := range []string{"plan.json", "mutate.sh"} {
		require.NoError(t, os.RemoveAll(filepath.Join(work, f)))
	}
	if _, err := os.Stat(filepath.Join(work, "base.tf")); err == nil {
		require.NoError(t, os.Rename(filepath.Join(work, "base.tf"), filepath.Join(work, "main.tf")))
	}
	tf := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TF_CLI_CONFIG_FILE=" + cli,
			"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_VAR_root=" + files, "TF_VAR_phase=base"}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", bin, args, out)
	}
	tf("init", "-input=false", "-no-color")
	tf("apply", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(filepath.Join(src, "mutate.sh")); err == nil {
		cmd := exec.Command("bash", filepath.Join(src, "mutate.sh"))
		cmd.Dir, cmd.Env = work, append(os.Environ(), "DIR="+files)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "mutate.sh: %s", out)
	}
	b, err := os.ReadFile(filepath.Join(src, "main.tf"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "main.tf"), b, 0o644))
	return work, files
}

// Every classification fixture, with Terraform and OpenTofu, gives the
// same exit code, the same findings and the same plan summary with the
// fast paths on (first run, and a re-check on the kept working directory)
// as with them off (show -json); and only the plan whose check fails
// still runs show -json: a plan that found nothing is summarised from its
// state and configuration snapshot, any other from the whole plan file.
func TestFastPathsSameFindings(t *testing.T) {
	bins, cli := tftest.Tools(t)
	cases, err := filepath.Glob(filepath.Join("..", "..", "terraform", "planparse", "testdata", "*", "main.tf"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	more, err := filepath.Glob(filepath.Join("testdata", "fastpath", "*", "main.tf"))
	require.NoError(t, err)
	cases = append(cases, more...)
	rules, err := policy.CompileRules([]string{"kubernetes_*", "helm_release"}, nil)
	require.NoError(t, err)
	// Cases whose plan finds nothing at all: the forbidden types (count =
	// 0 in configuration, in a module) must still be found.
	clean := map[string]bool{"clean": true, "forbidden_config_count0": true, "forbidden_in_state": true}
	// The case the plan file cannot summarise: a failing check.
	needsShow := map[string]bool{"failing_check": true}
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			t.Parallel()
			for _, main := range cases {
				name := filepath.Base(filepath.Dir(main))
				t.Run(name, func(t *testing.T) {
					work, files := fixture(t, bin, cli, filepath.Dir(main))
					req := terraform.Request{RunID: "r", Workspace: name, Binary: bin, Source: terraform.Source{Path: work},
						WorkDir: shortDir(t), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli,
						Vars: map[string]string{"root": files}}
					r := testRunner()
					r.KeepWorkDirs = true
					run := func(fast bool) (runner.Result, []drift.Finding) {
						req := req
						req.NoFastPaths = !fast
						res, err := r.Run(t.Context(), req)
						require.NoError(t, err)
						return res, policy.Classify(res.Plan, rules)
					}
					slowRes, slow := run(false)
					require.Contains(t, phaseNames(slowRes), "show")
					for i, phase := range []string{"init", "reuse"} {
						res, fast := run(true)
						require.Contains(t, phaseNames(res), phase, "fast run %d: %v", i+1, phaseNames(res))
						require.Equal(t, slowRes.ExitCode, res.ExitCode)
						if diff := cmp.Diff(slow, fast); diff != "" {
							t.Fatalf("fast run %d: findings differ (-show +fast):\n%s", i+1, diff)
						}
						require.Equal(t, needsShow[name], slices.Contains(phaseNames(res), "show"),
							"show -json runs only for a failing check: %v", phaseNames(res))
						// The summary itself: all of it from a decoded plan file
						// (show -json alone names the format version and, in
						// Terraform, whether the plan is applyable and complete),
						// the resources from a clean one.
						ignore := cmpopts.IgnoreFields(planparse.Plan{}, "FormatVersion", "Applyable", "Complete")
						if clean[name] {
							ignore = cmpopts.IgnoreFields(planparse.Plan{}, "FormatVersion", "TerraformVersion", "Applyable", "Complete", "NoOp")
						}
						if diff := cmp.Diff(slowRes.Plan, res.Plan, ignore, cmpopts.EquateEmpty()); diff != "" {
							t.Fatalf("fast run %d: plan summaries differ (-show +fast):\n%s", i+1, diff)
						}
					}
					want := map[string][]string{
						"forbidden_config_count0": {"kubernetes_config_map.disabled", "module.charts.helm_release.r"},
						"forbidden_in_state": {`kubernetes_config_map.cm["a"]`, `kubernetes_config_map.cm["b.c"]`,
							"kubernetes_config_map.off", `module.apps["x"].helm_release.app`},
					}[name]
					var got []string
					for _, f := range slow {
						if f.Kind == drift.KindForbidden {
							got = append(got, f.Address)
						}
					}
					if want != nil {
						require.ElementsMatch(t, want, got, "the forbidden resources found")
					}
				})
			}
		})
	}
}

// The kept working directory is reused only while nothing init depends
// on changed: a changed source, lock file or backend config inits afresh
// (told by the run's phases), and a kept directory spoilt between runs
// (its .terraform deleted, or its providers gone) falls back to a fresh
// init and the run succeeds.
func TestKeptWorkDirReuse(t *testing.T) {
	bins, cli := tftest.Tools(t)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			t.Parallel()
			src, files := shortDir(t), shortDir(t)
			mainTF := `terraform {
  backend "local" {}
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
resource "dwtest_file" "a" {
  filename = "` + files + `/a.txt"
  content  = "v1"
}
`
			write := func(name, content string) {
				require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(content), 0o644))
			}
			write("main.tf", mainTF)
			req := terraform.Request{RunID: "r", Workspace: "kept", Binary: bin, Source: terraform.Source{Path: src},
				WorkDir: shortDir(t), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli}
			kept := sandbox.KeptDir(req.WorkDir, req.Owner, req.Workspace)
			var logs bytes.Buffer
			r := New(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			r.KeepWorkDirs = true
			check := func(step, want string) runner.Result {
				t.Helper()
				res, err := r.Run(t.Context(), req)
				require.NoError(t, err, step)
				names := phaseNames(res)
				require.Contains(t, names, want, "%s: phases %v\nlogs:\n%s", step, names, &logs)
				// Nothing applied yet: the plan creates the file.
				require.Equal(t, 2, res.ExitCode, step)
				require.Len(t, res.Plan.Changes, 1, step)
				return res
			}
			check("first run", "init")
			check("nothing changed", "reuse")
			check("still nothing changed", "reuse")

			write("main.tf", mainTF+"# a new commit\n")
			check("source changed", "init")
			check("after the source change", "reuse")

			lock, err := os.ReadFile(filepath.Join(kept, ".terraform.lock.hcl"))
			require.NoError(t, err, "init's lock file is kept")
			write(".terraform.lock.hcl", string(lock)+"# committed\n")
			check("lock file committed", "init")
			check("after the lock file", "reuse")

			req.BackendConfig = []string{"path=terraform.tfstate"}
			check("backend config changed", "init")
			check("after the backend config", "reuse")

			require.NoError(t, os.RemoveAll(filepath.Join(kept, ".terraform")))
			check(".terraform deleted from the kept directory", "init")
			check("after .terraform deleted", "reuse")

			// Providers gone from the kept .terraform: the reused state
			// fails in plan, the run retries from a fresh init.
			require.NoError(t, os.RemoveAll(filepath.Join(kept, ".terraform", "providers")))
			check("providers deleted from the kept directory", "init")
			check("after the providers deleted", "reuse")

			// Fast paths off: never reused.
			req.NoFastPaths = true
			check("fast paths off", "init")
			check("fast paths still off", "init")

			// Back on, the state kept before is reused; a failed run then
			// keeps nothing.
			req.NoFastPaths = false
			check("fast paths on again", "reuse")
			write("main.tf", mainTF+`resource "dwtest_file" "b" {`)
			_, err = r.Run(t.Context(), req)
			require.Error(t, err)
			_, err = os.Stat(filepath.Join(kept, "key"))
			require.ErrorIs(t, err, os.ErrNotExist, "a failed run leaves nothing to reuse")
			entries, err := os.ReadDir(req.WorkDir)
			require.NoError(t, err)
			for _, e := range entries {
				require.False(t, strings.HasPrefix(e.Name(), "dw-"), "run directory %s left behind", e.Name())
			}
		})
	}
}

// A git source is kept by its commit: a re-check of the same commit skips
// init, a new commit (on the same ref) inits afresh.
func TestKeptWorkDirGitCommit(t *testing.T) {
	tftest.Program(t, "git")
	bins, cli := tftest.Tools(t)
	repo := t.TempDir()
	gitCmd(t, repo, "init", "--quiet", "--initial-branch=main")
	mainTF := `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
resource "terraform_data" "d" { input = "v1" }
`
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "envs", "prod"), 0o755))
	commit := func(content string) {
		require.NoError(t, os.WriteFile(filepath.Join(repo, "envs", "prod", "main.tf"), []byte(content), 0o644))
		gitCmd(t, repo, "add", "--all")
		gitCmd(t, repo, "commit", "--quiet", "-m", "change")
	}
	commit(mainTF)
	req := terraform.Request{RunID: "r", Workspace: "git", Binary: bins[0],
		Source:  terraform.Source{Git: &terraform.Git{URL: repo, Ref: "main", Path: "envs/prod"}},
		WorkDir: shortDir(t), GitCacheDir: shortDir(t), Timeout: 2 * time.Minute, KillGrace: time.Second, CLIConfigFile: cli}
	r := testRunner()
	r.KeepWorkDirs = true
	check := func(step, want string) string {
		t.Helper()
		res, err := r.Run(t.Context(), req)
		require.NoError(t, err, step)
		require.Contains(t, phaseNames(res), want, "%s: phases %v", step, phaseNames(res))
		return res.Commit
	}
	first := check("first run", "init")
	require.Equal(t, first, check("same commit", "reuse"))
	commit(mainTF + "# a new commit\n")
	second := check("new commit", "init")
	require.NotEqual(t, first, second)
	check("same new commit", "reuse")
}
