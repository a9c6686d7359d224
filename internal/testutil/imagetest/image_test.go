package imagetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestImageVersion: `driftwatch --version` (and `version`) print the
// version the image was built with (its org.opencontainers.image.version
// label, set from the same build argument).
func TestImageVersion(t *testing.T) {
	eachImage(t, func(t *testing.T, e *env) {
		want := e.label(t, "org.opencontainers.image.version")
		require.NotEmpty(t, want, "image has no org.opencontainers.image.version label")
		for _, arg := range []string{"--version", "version"} {
			res := e.run(t, run{args: []string{arg}})
			require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
			assert.True(t, strings.HasPrefix(res.stdout, "driftwatch "+want+" "), "%s: %q, want driftwatch %s", arg, res.stdout, want)
		}
	})
}

// TestImageContents: the image runs as uid 65532 by default (not just when
// told), carries what runs need (its tool, of the version its label says,
// and not the other one) and none of what builds need.
func TestImageContents(t *testing.T) {
	eachImage(t, testImageContents)
}

func testImageContents(t *testing.T, e *env) {
	version := e.label(t, toolVersionLabel)
	require.NotEmpty(t, version, "image has no %s label", toolVersionLabel)
	other := map[string]string{"terraform": "tofu", "tofu": "terraform"}[e.tool]
	assert.Equal(t, uid+":"+uid, e.dockerCmd(t, "image", "inspect", "--format", "{{.Config.User}}", e.image))
	// No --user: the image's own user.
	res := e.run(t, run{opts: []string{"--user", ""}, entrypoint: "/bin/sh", args: []string{"-ec", `
id -u; id -g; echo "HOME=$HOME"
# needed at run time
for p in ` + e.tool + ` git bwrap driftwatch; do command -v "$p" >/dev/null || { echo "missing $p"; exit 3; }; done
test -s /etc/ssl/certs/ca-certificates.crt || { echo "no CA bundle"; exit 3; }
` + e.tool + ` version | head -n 1
# one tool only
if command -v ` + other + ` >/dev/null; then echo "has ` + other + `"; exit 4; fi
# not in a runtime image
for p in go gcc cc make curl unzip; do if command -v "$p" >/dev/null; then echo "has $p"; exit 4; fi; done
test -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v '^lock$' | grep -v '^partial$')" || { echo "apt lists left"; exit 4; }
test -z "$(find /var/cache/apt -type f 2>/dev/null)" || { echo "apt cache left"; exit 4; }
test ! -e /usr/local/go || { echo "Go toolchain left"; exit 4; }
`}})
	require.Equal(t, 0, res.code, "stdout: %s\nstderr: %s", res.stdout, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 4, res.stdout)
	assert.Equal(t, uid, lines[0], "uid")
	assert.Equal(t, uid, lines[1], "gid")
	assert.Equal(t, "HOME="+ctrHome, lines[2])
	assert.Equal(t, e.banner+version, lines[3], "the %s label", toolVersionLabel)
	size, err := strconv.ParseInt(e.dockerCmd(t, "image", "inspect", "--format", "{{.Size}}", e.image), 10, 64)
	require.NoError(t, err)
	t.Logf("image %s: %.1f MB", e.image, float64(size)/1e6)
}

// setupExample copies configs/examples into a fresh work dir and, in the
// image, applies every workspace as hack/run-example.sh does, then edits a
// managed file behind Terraform's back.
func setupExample(t *testing.T, e *env) (opts []string) {
	t.Helper()
	dir, work := e.workDir(t)
	copyDir(t, filepath.Join(repoRoot(t), "configs", "examples"), dir)
	// A plugin cache on its own volume, as the chart would mount one.
	cfgPath := filepath.Join(dir, "driftwatch.yaml")
	cfg, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	patched := strings.Replace(string(cfg), "terraform:\n", "terraform:\n  plugin_cache_dir: "+ctrCache+"/plugins\n", 1)
	require.NotEqual(t, string(cfg), patched)
	require.NoError(t, os.WriteFile(cfgPath, []byte(patched), 0o644))
	opts = slices.Concat(work, e.tfOpts(t))
	res := e.sh(t, opts, `
mkdir -p `+ctrCache+`/plugins
for ws in network dns release platform; do
  printf 'out_dir = "%s/out"\n' "$PWD" > "$ws/example.auto.tfvars"
  extra=""
  [ "$ws" = release ] && extra="-var app_version=1.4.0"
  $TF -chdir="$ws" init -input=false -no-color >/dev/null
  $TF -chdir="$ws" apply -auto-approve -input=false -no-color $extra >/dev/null
  chmod 600 "$ws/terraform.tfstate"
done
echo "10.0.0.99 gateway # hotfix" > out/network/hosts.conf
`)
	require.Equal(t, 0, res.code, "applying the examples in the image:\nstdout: %s\nstderr: %s", res.stdout, res.stderr)
	return opts
}

// TestImageAuditExample: `driftwatch audit` of the example inventory in the
// hardened container runs the image's real tool (the example sets no
// terraform.binary: terraform, else tofu, from PATH) with providers from
// the mirror and reports the real drift, with exit code 2.
func TestImageAuditExample(t *testing.T) {
	eachImage(t, testImageAuditExample)
}

func testImageAuditExample(t *testing.T, e *env) {
	opts := setupExample(t, e)
	start := time.Now()
	res := e.run(t, run{opts: opts, args: []string{"audit", "--config", ctrWork + "/driftwatch.yaml", "--format", "json"}})
	t.Logf("audit in the image: %s, exit %d\nstderr:\n%s", time.Since(start).Round(time.Millisecond), res.code, res.stderr)
	rep := parseReport(t, res.stdout)
	tool := e.tool + " " + e.label(t, toolVersionLabel)
	for _, w := range rep.Workspaces {
		assert.Empty(t, w.Error, "workspace %s", w.Name)
		assert.Equal(t, tool, w.Tool, "workspace %s: the tool that planned it", w.Name)
	}
	net := workspace(t, rep, "network")
	assert.Equal(t, drift.StatusDrift, net.Status)
	var hosts *drift.Finding
	for i, f := range net.Findings {
		if f.Address == "dwtest_file.hosts" {
			hosts = &net.Findings[i]
		}
	}
	if assert.NotNil(t, hosts, "findings: %+v", net.Findings) {
		assert.Equal(t, drift.KindDrift, hosts.Kind)
		assert.Equal(t, []string{"content"}, hosts.Attributes)
	}
	assert.Equal(t, drift.StatusClean, workspace(t, rep, "dns").Status)
	assert.Equal(t, drift.StatusPending, workspace(t, rep, "release").Status)
	assert.Equal(t, drift.StatusForbidden, workspace(t, rep, "platform").Status)
	assert.Equal(t, report.ExitChanges, res.code, "audit exit code")
}

// TestImageGitModuleSource: a git:: module source (a bare repo on a
// read-only volume) works in the image, for a plain `<tool> init` and in
// driftwatch's runs. Git refuses a repository owned by another user
// ("dubious ownership", git >= 2.35.2), as a volume from a git-sync sidecar
// or a host path often is: the workspace's env then names a gitconfig that
// lists it as safe.directory (GIT_CONFIG_GLOBAL; git 2.39 ignores
// safe.directory given as GIT_CONFIG_COUNT/-c).
func TestImageGitModuleSource(t *testing.T) {
	tftest.Short(t, "docker and the image")
	gitBin, err := exec.LookPath("git")
	if err != nil {
		tftest.Unavailable(t, "git is not on PATH; `make deps` installs it")
	}
	// The module repository, made on the host: owned by the test's user.
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(`
variable "out_dir" { type = string }
resource "local_file" "greeting" {
  filename = "${var.out_dir}/greeting.txt"
  content  = "hello from a git module\n"
}
`), 0o644))
	bare := filepath.Join(t.TempDir(), "modules.git")
	gitEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + src, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}
	for _, args := range [][]string{
		{"-C", src, "init", "-q", "-b", "main"}, {"-C", src, "add", "."}, {"-C", src, "commit", "-qm", "greeting"},
		{"-C", src, "tag", "v1"}, {"clone", "-q", "--bare", src, bare},
	} {
		cmd := exec.Command(gitBin, args...)
		cmd.Env = gitEnv
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	require.NoError(t, filepath.WalkDir(bare, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			mode := os.FileMode(0o644)
			if d.IsDir() {
				mode = 0o755
			}
			err = os.Chmod(p, mode)
		}
		return err
	}))
	const repo = "/srv/git/modules.git"

	eachImage(t, func(t *testing.T, e *env) {
		// check applies a workspace using the module in the image, then audits
		// it with driftwatch (clean: the module is fetched again in the run).
		check := func(t *testing.T, repoOpts []string, wsEnv string) {
			dir, work := e.workDir(t)
			require.NoError(t, os.Mkdir(filepath.Join(dir, "gitmod"), 0o777))
			require.NoError(t, os.Chmod(filepath.Join(dir, "gitmod"), 0o777))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "gitmod", "main.tf"), []byte(`
terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
module "greeting" {
  source  = "git::file://`+repo+`?ref=v1"
  out_dir = "`+ctrWork+`/out"
}
`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "driftwatch.yaml"), []byte(`
terraform:
  sandbox_paths: [./out]
defaults:
  labels: { env: dev }
workspaces:
  - name: gitmod
    source: { path: ./gitmod }
`+wsEnv), 0o644))
			opts := slices.Concat(work, e.tfOpts(t), repoOpts)
			shEnv := ""
			if wsEnv != "" {
				shEnv = "export GIT_CONFIG_GLOBAL=/etc/driftwatch/gitconfig\n"
			}
			res := e.sh(t, opts, shEnv+`
$TF -chdir=gitmod init -input=false -no-color >/dev/null
$TF -chdir=gitmod apply -auto-approve -input=false -no-color >/dev/null
chmod 600 gitmod/terraform.tfstate
cat out/greeting.txt
`)
			require.Equal(t, 0, res.code, "init/apply with a git:: module in the image:\nstdout: %s\nstderr: %s", res.stdout, res.stderr)
			require.Equal(t, "hello from a git module\n", res.stdout)

			res = e.run(t, run{opts: opts, args: []string{"audit", "--config", ctrWork + "/driftwatch.yaml", "--format", "json"}})
			rep := parseReport(t, res.stdout)
			w := workspace(t, rep, "gitmod")
			assert.Empty(t, w.Error, "stderr:\n%s", res.stderr)
			assert.Equal(t, drift.StatusClean, w.Status, "findings: %+v", w.Findings)
			assert.Equal(t, report.ExitClean, res.code, "stderr:\n%s", res.stderr)
		}

		t.Run("owned by the container user", func(t *testing.T) {
			// Copied onto a volume by the container's user, then mounted read-only.
			vol := t.TempDir()
			require.NoError(t, os.Chmod(vol, 0o777))
			res := e.run(t, run{opts: []string{"-v", bare + ":/in:ro", "-v", vol + ":/srv/git"},
				entrypoint: "/bin/cp", args: []string{"-R", "/in", repo}})
			require.Equal(t, 0, res.code, res.stderr)
			t.Cleanup(func() {
				_ = exec.Command(e.docker, "run", "--rm", "--network", "none", "--user", uid+":"+uid,
					"-v", vol+":/srv/git", "--entrypoint", "/bin/rm", e.image, "-rf", repo).Run()
			})
			check(t, []string{"-v", vol + ":/srv/git:ro"}, "")
		})

		t.Run("owned by another user", func(t *testing.T) {
			// Copied onto a volume by root (not the container's user, whatever
			// uid the test runs as), then mounted read-only.
			vol := t.TempDir()
			asRoot := func(args ...string) *exec.Cmd {
				return exec.Command(e.docker, append([]string{"run", "--rm", "--network", "none", "--user", "0:0",
					"-v", bare + ":/in:ro", "-v", vol + ":/srv/git"}, args...)...)
			}
			out, err := asRoot("--entrypoint", "/bin/cp", e.image, "-R", "/in", repo).CombinedOutput()
			require.NoError(t, err, "%s", out)
			t.Cleanup(func() { _ = asRoot("--entrypoint", "/bin/rm", e.image, "-rf", repo).Run() })
			opts := []string{"-v", vol + ":/srv/git:ro"}
			// Without safe.directory git refuses it: the failure says why.
			_, work := e.workDir(t)
			res := e.sh(t, append(work, opts...), "cd /tmp && git clone -q file://"+repo+" x")
			require.NotEqual(t, 0, res.code)
			require.Contains(t, res.stderr, "dubious ownership")
			// With it, from a gitconfig on a (ConfigMap) volume named by the workspace's env.
			gc := filepath.Join(t.TempDir(), "gitconfig")
			require.NoError(t, os.WriteFile(gc, []byte("[safe]\n\tdirectory = "+repo+"\n"), 0o644))
			opts = append(opts, "-v", gc+":/etc/driftwatch/gitconfig:ro")
			check(t, opts, "    env: { GIT_CONFIG_GLOBAL: /etc/driftwatch/gitconfig }\n")
		})
	})
}

// TestImageSIGTERM: SIGTERM to the container (docker stop, a pod's
// deletion) reaches driftwatch, PID 1 in the container, which stops
// Terraform and exits promptly: an audit in the middle of a plan, and an
// idle daemon.
func TestImageSIGTERM(t *testing.T) {
	eachImage(t, testImageSIGTERM)
}

func testImageSIGTERM(t *testing.T, e *env) {
	dir, work := e.workDir(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "slow"), 0o777))
	require.NoError(t, os.Chmod(filepath.Join(dir, "slow"), 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slow", "main.tf"), []byte(`
terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
data "dwtest_sleep" "wait" { duration = "10m" }
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "driftwatch.yaml"), []byte(`
server:
  listen: 127.0.0.1:8080
store:
  path: ./data/driftwatch.db
defaults:
  schedule: "0 0 1 1 *"
  labels: { env: dev }
workspaces:
  - name: slow
    source: { path: ./slow }
`), 0o644))
	opts := slices.Concat(work, e.tfOpts(t))

	// stop sends SIGTERM (docker stop, with a long grace before SIGKILL) and
	// returns the exit code and how long the container took to exit.
	stop := func(t *testing.T, id string) (int, time.Duration) {
		t.Helper()
		start := time.Now()
		e.dockerCmd(t, "stop", "--time", "60", id)
		took := time.Since(start)
		code, err := strconv.Atoi(e.dockerCmd(t, "inspect", "--format", "{{.State.ExitCode}}", id))
		require.NoError(t, err)
		return code, took
	}
	start := func(t *testing.T, args ...string) string {
		t.Helper()
		id := e.dockerCmd(t, e.dockerArgs(run{opts: opts, args: args}, true)...)
		t.Cleanup(func() { _ = exec.Command(e.docker, "rm", "-f", id).Run() })
		return id
	}
	logs := func(id string) string {
		out, _ := exec.Command(e.docker, "logs", id).CombinedOutput()
		return string(out)
	}

	// waitPlanning waits until Terraform is planning (the provider sleeps).
	waitPlanning := func(t *testing.T, id string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			top, _ := exec.Command(e.docker, "top", id, "-o", "pid,args").Output()
			if strings.Contains(string(top), "terraform-provider-dwtest") {
				return
			}
			require.True(t, time.Now().Before(deadline), "Terraform never started planning; logs:\n%s\nps:\n%s", logs(id), top)
			time.Sleep(250 * time.Millisecond)
		}
	}

	t.Run("audit", func(t *testing.T) {
		id := start(t, "audit", "--config", ctrWork+"/driftwatch.yaml", "--format", "json")
		waitPlanning(t, id)
		code, took := stop(t, id)
		t.Logf("audit stopped by SIGTERM in %s, exit %d\nlogs:\n%s", took.Round(time.Millisecond), code, logs(id))
		assert.Less(t, took, 30*time.Second, "SIGTERM did not stop the audit promptly")
		assert.Equal(t, report.ExitError, code, "an interrupted audit exits as an error (never clean)")
	})

	t.Run("daemon", func(t *testing.T) {
		// The daemon checks every workspace at start: stopped in the middle
		// of that plan, as when its pod is deleted.
		id := start(t, "daemon", "--config", ctrWork+"/driftwatch.yaml")
		waitPlanning(t, id)
		code, took := stop(t, id)
		out := logs(id)
		t.Logf("daemon stopped by SIGTERM in %s, exit %d", took.Round(time.Millisecond), code)
		assert.Less(t, took, 30*time.Second, "SIGTERM did not stop the daemon promptly")
		assert.Equal(t, 0, code, "logs:\n%s", out)
		assert.Contains(t, out, "driftwatch daemon stopped")
	})
}
