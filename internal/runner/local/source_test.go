package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// gitCmd runs the system git for fixtures, isolated from the machine's
// configuration.
func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=driftwatch", "GIT_AUTHOR_EMAIL=test@driftwatch.invalid",
		"GIT_COMMITTER_NAME=driftwatch", "GIT_COMMITTER_EMAIL=test@driftwatch.invalid",
		"LC_ALL=C",
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
}

// A git source whose evil.tf is a symlink to a named pipe hung a run for
// over ten minutes, past its timeout: the runner reads .tf files itself
// (sensitive variables, the backend block) before Terraform runs. A link
// to /dev/zero would have exhausted memory, one to /etc/passwd handed a
// host file to Terraform. Each now fails the run at once, in the source
// phase, naming the file. No Terraform is needed: the binary does not
// exist, and the run never gets that far.
func TestRunRefusesUnsafeGitSource(t *testing.T) {
	tftest.Program(t, "git")
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	t.Cleanup(func() { // releases a reader that blocked after all
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})

	repo := t.TempDir()
	gitCmd(t, repo, "init", "--quiet", "--initial-branch=main")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "envs", "prod"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "envs", "prod", "main.tf"), []byte(`variable "pw" { sensitive = true }`), 0o644))
	gitCmd(t, repo, "add", "--all")
	gitCmd(t, repo, "commit", "--quiet", "-m", "base")

	cases := []struct {
		name, branch, file, target string
	}{
		{name: "named pipe", branch: "fifo", file: "envs/prod/evil.tf", target: fifo},
		{name: "dev zero", branch: "zero", file: "envs/prod/evil.tf", target: "/dev/zero"},
		{name: "etc passwd", branch: "passwd", file: "envs/prod/evil.tf", target: "../../../../../../../../../../../etc/passwd"},
		{name: "var file outside the module", branch: "vars", file: "terraform.tfvars", target: "/dev/zero"},
	}
	for _, tc := range cases {
		gitCmd(t, repo, "checkout", "--quiet", "-b", tc.branch, "main")
		require.NoError(t, os.Symlink(tc.target, filepath.Join(repo, filepath.FromSlash(tc.file))))
		gitCmd(t, repo, "add", "--all")
		gitCmd(t, repo, "commit", "--quiet", "-m", tc.name)
	}
	gitCmd(t, repo, "checkout", "--quiet", "main")

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Not t.TempDir(): the run directory's path must stay short
			// (sandbox.NewDir), and subtest names make it long.
			workDir, err := os.MkdirTemp("", "dwt-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(workDir) })
			req := terraform.Request{
				RunID: "r1", Workspace: "ws",
				Binary:      filepath.Join(t.TempDir(), "no-such-terraform"),
				Source:      terraform.Source{Git: &terraform.Git{URL: repo, Ref: tc.branch, Path: "envs/prod"}},
				VarFiles:    []string{"../../terraform.tfvars"},
				WorkDir:     workDir,
				GitCacheDir: t.TempDir(),
				Timeout:     20 * time.Second, // a guard only
				KillGrace:   time.Second,
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := testRunner().Run(t.Context(), req)
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run blocked on a file of the source")
			}
			require.Less(t, time.Since(start), 10*time.Second, "failed promptly, not at the run's timeout")
			var re *terraform.Error
			require.ErrorAs(t, err, &re, "%v", err)
			require.Equal(t, "source", re.Phase, "%v", err)
			require.ErrorIs(t, err, source.ErrEscapes)
			require.NotErrorIs(t, err, terraform.ErrTimeout)
			require.Contains(t, re.Error(), tc.file+": symlink to "+tc.target+" points outside the source directory")
			entries, _ := os.ReadDir(req.WorkDir)
			require.Empty(t, entries, "the run directory is removed")
		})
	}
}
