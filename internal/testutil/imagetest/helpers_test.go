package imagetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

const (
	uid = "65532" // the image's user (Dockerfile USER)
	// Where the tests mount things inside the container.
	ctrWork   = "/work"                       // the inventory (read-write)
	ctrMirror = "/opt/terraform-mirror"       // the offline provider mirror (read-only)
	ctrCLIRC  = "/etc/driftwatch/terraformrc" // CLI config naming that mirror (read-only)
	ctrCache  = "/var/cache/driftwatch"       // plugin cache volume
	ctrHome   = "/home/driftwatch"
)

// The images the tests run, one per tool: each test runs against both
// (eachImage). The variables name them; `make test` sets them to
// driftwatch:dev and driftwatch:dev-tofu (`make image`, `make image TOOL=tofu`).
var images = []struct {
	tool   string // the tool the image holds: its label toolLabel says so
	envVar string
	banner string // how `<tool> version` starts its first line
}{
	{"terraform", "DRIFTWATCH_IMAGE", "Terraform v"},
	{"tofu", "DRIFTWATCH_IMAGE_TOFU", "OpenTofu v"},
}

// The labels naming the image's tool and its version (Dockerfile).
const (
	toolLabel        = "io.github.driftwatch.tool"
	toolVersionLabel = "io.github.driftwatch.tool.version"
)

// env is what every test needs: the image, a docker CLI that reaches its
// engine, and the offline provider mirror.
type env struct {
	image  string
	tool   string // "terraform" or "tofu": the binary the image holds
	banner string // the first words of `<tool> version`
	docker string
	mirror string // host path of the filesystem mirror
}

// eachImage runs f as a subtest for each image: terraform, then tofu.
func eachImage(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, im := range images {
		t.Run(im.tool, func(t *testing.T) {
			e := setup(t, im.envVar)
			e.tool, e.banner = im.tool, im.banner
			require.Equal(t, im.tool, e.label(t, toolLabel), "%s=%s: the image's %s label", im.envVar, e.image, toolLabel)
			f(t, e)
		})
	}
}

func setup(t *testing.T, envVar string) *env {
	t.Helper()
	tftest.Short(t, "docker and the image")
	e := &env{image: os.Getenv(envVar), docker: os.Getenv("DRIFTWATCH_DOCKER")}
	if e.image == "" {
		tftest.Unavailable(t, envVar+" not set; run `make image` (and `make image TOOL=tofu`) and export it (make test does)")
	}
	if e.docker == "" {
		e.docker = "docker"
	}
	if _, err := exec.LookPath(e.docker); err != nil {
		tftest.Unavailable(t, "no docker CLI ("+e.docker+"); `make image-tools` installs Debian's docker.io")
	}
	if out, err := exec.Command(e.docker, "image", "inspect", "--format", "{{.Id}}", e.image).CombinedOutput(); err != nil {
		tftest.Unavailable(t, fmt.Sprintf("image %s not found at DOCKER_HOST=%q: %v: %s", e.image, os.Getenv("DOCKER_HOST"), err, out))
	}
	rc := os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if rc == "" {
		tftest.Unavailable(t, "DRIFTWATCH_TF_CLI_CONFIG not set; run `make tools` (make test does)")
	}
	data, err := os.ReadFile(rc)
	require.NoError(t, err)
	m := regexp.MustCompile(`path\s*=\s*"([^"]+)"`).FindSubmatch(data)
	require.NotNil(t, m, "no filesystem_mirror path in %s", rc)
	e.mirror = string(m[1])
	return e
}

// label is the image's label key ("" when it has none).
func (e *env) label(t *testing.T, key string) string {
	t.Helper()
	return e.dockerCmd(t, "image", "inspect", "--format", `{{index .Config.Labels "`+key+`"}}`, e.image)
}

// run is one `docker run` of the image.
type run struct {
	opts       []string // extra docker run options
	entrypoint string
	args       []string
	timeout    time.Duration
}

type result struct {
	stdout, stderr string
	code           int
}

// baseOpts: how a cluster runs the image, hardened: read-only root
// filesystem, non-root, no capabilities, no privilege escalation, no
// network; /tmp and HOME writable volumes (like emptyDirs: exec allowed,
// unlike docker's default tmpfs options).
func (e *env) baseOpts() []string {
	return []string{
		"--read-only", "--user", uid + ":" + uid, "--network", "none",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--tmpfs", "/tmp:rw,exec,mode=1777", "--tmpfs", ctrHome + ":rw,exec,mode=1777",
		"--tmpfs", ctrCache + ":rw,exec,mode=1777",
	}
}

// tfOpts: the provider mirror and a CLI config naming it, both read-only.
func (e *env) tfOpts(t *testing.T) []string {
	t.Helper()
	rc := filepath.Join(t.TempDir(), "terraformrc")
	writeTerraformRC(t, rc)
	return append(e.mirrorOpts(ctrCLIRC), "-v", rc+":"+ctrCLIRC+":ro")
}

// mirrorOpts: the provider mirror, read-only, and Terraform told to read
// its CLI config at rc (a path in the container).
func (e *env) mirrorOpts(rc string) []string {
	return []string{
		"-v", e.mirror + ":" + ctrMirror + ":ro",
		"-e", "TF_CLI_CONFIG_FILE=" + rc, "-e", "CHECKPOINT_DISABLE=1",
	}
}

// writeTerraformRC writes a Terraform CLI config at path (on the host)
// that installs providers from the mirror at ctrMirror only.
func writeTerraformRC(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["*/*/*"]
  }
}
disable_checkpoint = true
`, ctrMirror)), 0o644))
}

func (e *env) dockerArgs(r run, detach bool) []string {
	args := []string{"run"}
	if detach {
		args = append(args, "-d")
	} else {
		args = append(args, "--rm")
	}
	args = append(args, e.baseOpts()...)
	args = append(args, r.opts...)
	if r.entrypoint != "" {
		args = append(args, "--entrypoint", r.entrypoint)
	}
	args = append(args, e.image)
	return append(args, r.args...)
}

func (e *env) run(t *testing.T, r run) result {
	t.Helper()
	if r.timeout == 0 {
		r.timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, e.docker, e.dockerArgs(r, false)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		res.code = ee.ExitCode()
	default:
		t.Fatalf("docker run %v: %v\nstdout:\n%s\nstderr:\n%s", r.args, err, res.stdout, res.stderr)
	}
	// 125: docker itself failed (bad option, no such image, engine error).
	require.NotEqual(t, 125, res.code, "docker run %v failed:\n%s", r.args, res.stderr)
	return res
}

// sh runs a shell script in the image (as its user, with the tool set up:
// $TF names it, terraform or tofu).
func (e *env) sh(t *testing.T, opts []string, script string) result {
	t.Helper()
	return e.run(t, run{opts: opts, entrypoint: "/bin/sh", args: []string{"-ec", "TF=" + e.tool + "\n" + script}})
}

// docker runs the docker CLI and returns its trimmed stdout.
func (e *env) dockerCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(e.docker, args...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("docker %v: %v: %s", args, err, ee.Stderr)
	}
	require.NoError(t, err, "docker %v", args)
	return strings.TrimSpace(string(out))
}

// workDir returns a host directory the container's user can write, mounted
// at ctrWork, and removes what the container left there (files owned by
// uid 65532) when the test ends, from a container, so it works without root.
func (e *env) workDir(t *testing.T) (dir string, opts []string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o777))
	t.Cleanup(func() {
		_ = exec.Command(e.docker, "run", "--rm", "--network", "none", "--user", uid+":"+uid,
			"-v", dir+":"+ctrWork, "--entrypoint", "/bin/sh", e.image,
			"-c", "rm -rf "+ctrWork+"/* "+ctrWork+"/.[!.]*").Run()
	})
	return dir, []string{"-v", dir + ":" + ctrWork, "-w", ctrWork}
}

// copyDir copies the regular files under src to dst (world-readable).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o777)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	}))
	// MkdirAll's mode is filtered by the umask; the container's user must write.
	require.NoError(t, filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o777)
		}
		return err
	}))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..", "..")
}

func parseReport(t *testing.T, out string) report.Report {
	t.Helper()
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "report:\n%s", out)
	return rep
}

func workspace(t *testing.T, rep report.Report, name string) report.Workspace {
	t.Helper()
	for _, w := range rep.Workspaces {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no workspace %q in the report", name)
	return report.Workspace{}
}
