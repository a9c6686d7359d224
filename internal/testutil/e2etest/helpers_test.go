package e2etest

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

var driftwatchBin string

// buildTags are the tags the driftwatch binary under test is built with
// ("faults" in the fault-injection suite: see faults_main_test.go).
var buildTags string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "driftwatch-e2e-bin-")
	if err != nil {
		panic(err)
	}
	driftwatchBin = filepath.Join(dir, "driftwatch")
	out, err := exec.Command("go", "build", "-tags="+buildTags, "-o", driftwatchBin, "github.com/driftwatch/driftwatch/cmd/driftwatch").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build driftwatch: %v\n%s", err, out)
		os.Exit(1)
	}
	code := tftest.Main(m)
	if err := pgtest.Stop(); err != nil && code == 0 {
		code = 1 // a test used PostgreSQL (pgtest.Database)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// e2eLanes is how many of this package's end-to-end tests run at a time
// (fewer where go test's -parallel, GOMAXPROCS by default, is lower). They
// spend most of their time waiting on processes (Terraform, a daemon's
// schedule, an object store starting, a control plane), so a few side by
// side shorten the suite without starving each other.
const e2eLanes = 3

var lanes = make(chan struct{}, e2eLanes)

// parallel marks t parallel and waits for one of e2eLanes lanes, which it
// holds until its cleanups have run (its daemons stopped, its temporary
// directories removed). Every test has what it touches to itself: its own
// temporary directories, daemon, ports, object store, database and
// receivers; none sets an environment variable or changes a package-level
// one. The time -v prints for a test includes its wait for a lane.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	lanes <- struct{}{}
	t.Cleanup(func() { <-lanes })
}

// forEachTool runs fn as a subtest per available binary (terraform, tofu).
func forEachTool(t *testing.T, fn func(t *testing.T, env *tfEnv)) {
	bins, cli := tftest.Tools(t)
	for _, b := range bins {
		t.Run(filepath.Base(b), func(t *testing.T) {
			// Not t.TempDir(), which holds the test's name and the
			// binary's (terraform-1.14): the runs' work dirs below root
			// must stay short enough for providers' unix sockets.
			root, err := os.MkdirTemp("", "dwe2e")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			fn(t, &tfEnv{bin: b, cliConfig: cli, root: root})
		})
	}
}

// tfEnv drives real Terraform to prepare workspaces and runs driftwatch.
type tfEnv struct {
	bin       string
	cliConfig string
	root      string
	sandbox   string // terraform.sandbox ("": the default, auto)
	// extraSandbox are sandbox_paths besides root.
	extraSandbox []string
	// hostPorts are written as terraform.sandbox_host_ports: servers of
	// the test on this machine's loopback (an S3 store, a module server)
	// that the jailed runs, in a network namespace of their own, may
	// reach.
	hostPorts []string
	// network, if set, is terraform.sandbox_network.
	network string
	// fastPathsOff writes terraform.fast_paths: false: every run inits
	// and runs show -json, for tests that count a run's requests or stop
	// a run in show.
	fastPathsOff bool
}

// workspace writes files (name -> content; "@ROOT@" is replaced by the
// test's root dir) into root/name and returns the directory.
func (e *tfEnv) workspace(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(e.root, name)
	for f, content := range files {
		p := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(content, "@ROOT@", e.root)), 0o644))
	}
	return dir
}

// tf runs the real binary in dir.
func (e *tfEnv) tf(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.root, "TF_CLI_CONFIG_FILE=" + e.cliConfig,
		"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v in %s:\n%s", e.bin, args, dir, out)
}

// twoFiles writes and applies workspace name, whose two dwtest files are
// out/a.txt and out/b.txt, both "v1"; it returns the workspace's and the
// files' directories.
func (e *tfEnv) twoFiles(t *testing.T, name string) (ws, out string) {
	t.Helper()
	out = filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	ws = e.workspace(t, name, map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
resource "dwtest_file" "b" {
  filename = "@ROOT@/out/b.txt"
  content  = "v1"
}
`})
	e.apply(t, ws)
	return ws, out
}

// apply inits and applies dir.
func (e *tfEnv) apply(t *testing.T, dir string, args ...string) {
	t.Helper()
	e.tf(t, dir, "init", "-input=false", "-no-color")
	e.tf(t, dir, append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, args...)...)
}

// config writes a driftwatch config whose terraform section points at this
// environment, followed by the given workspaces YAML.
func (e *tfEnv) config(t *testing.T, workspaces string) string {
	t.Helper()
	p := filepath.Join(e.root, "driftwatch.yaml")
	// The workspaces' local_file resources live under root: the sandbox
	// lets the runs reach it.
	sandbox := ""
	if e.sandbox != "" {
		sandbox = "  sandbox: " + e.sandbox + "\n"
	}
	if e.fastPathsOff {
		sandbox += "  fast_paths: false\n"
	}
	if e.network != "" {
		sandbox += "  sandbox_network: " + e.network + "\n"
	}
	if len(e.hostPorts) > 0 {
		sandbox += fmt.Sprintf("  sandbox_host_ports: [%s]\n", strings.Join(e.hostPorts, ", "))
	}
	body := fmt.Sprintf("terraform:\n  binary: %s\n  cli_config_file: %s\n  plugin_cache_dir: %s\n  work_dir: %s\n  kill_grace: 2s\n  sandbox_paths: [%s]\n%s%s",
		e.bin, e.cliConfig, filepath.Join(e.root, "plugin-cache"), e.workDir(), strings.Join(append([]string{e.root}, e.extraSandbox...), ", "), sandbox, workspaces)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// allowHost lets the jailed runs reach the test's server at a URL or
// host:port on this machine's loopback (terraform.sandbox_host_ports).
func (e *tfEnv) allowHost(t *testing.T, addr string) {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	e.hostPorts = append(e.hostPorts, addr)
}

func (e *tfEnv) workDir() string { return filepath.Join(e.root, "runs") }

type runOut struct {
	stdout, stderr string
	code           int
}

// driftwatch runs the binary with a minimal environment.
func driftwatch(t *testing.T, env []string, args ...string) runOut {
	t.Helper()
	cmd := exec.Command(driftwatchBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return runOut{stdout: so.String(), stderr: se.String(), code: code}
}

// jsonReport mirrors the documented JSON contract; decoding with
// DisallowUnknownFields keeps docs/reports.md and the code in step.
type jsonReport struct {
	Version    int    `json:"version"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	Summary    struct {
		Clean, Drift, Pending, Validation, Forbidden, Errored, Hygiene int
	} `json:"summary"`
	Workspaces []struct {
		Name       string            `json:"name"`
		Status     drift.Status      `json:"status"`
		DurationMS int64             `json:"duration_ms"`
		Error      string            `json:"error"`
		Labels     map[string]string `json:"labels"`
		Tool       string            `json:"tool"`
		Findings   []drift.Finding   `json:"findings"`
	} `json:"workspaces"`
}

// parseReport decodes a JSON report. Every drift finding must name its
// resource's provider (a source address whose type name prefixes the
// resource type: registry.terraform.io/driftwatch/dwtest for
// dwtest_file), and one with changed attributes its shape; both are then
// cleared, so that the tests compare the classification alone.
func parseReport(t *testing.T, data string) jsonReport {
	t.Helper()
	var r jsonReport
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&r), data)
	for _, w := range r.Workspaces {
		for i := range w.Findings {
			f := &w.Findings[i]
			if f.Kind == drift.KindDrift {
				name := f.Provider[strings.LastIndex(f.Provider, "/")+1:]
				require.True(t, f.Provider != "" && strings.HasPrefix(f.Type, name+"_"), "%s: provider %q", f.Address, f.Provider)
				require.Equal(t, len(f.Attributes) > 0, f.Shape != "", "%s: shape %q of %v", f.Address, f.Shape, f.Attributes)
			}
			f.Provider, f.Shape = "", ""
		}
	}
	return r
}

// ws returns the report entry for name.
func (r jsonReport) ws(t *testing.T, name string) (status drift.Status, errMsg string, findings []drift.Finding) {
	t.Helper()
	for _, w := range r.Workspaces {
		if w.Name == name {
			return w.Status, w.Error, w.Findings
		}
	}
	t.Fatalf("workspace %q not in report", name)
	return "", "", nil
}

// counted drops noise, ignored and backend-hygiene findings.
func counted(fs []drift.Finding) []drift.Finding {
	var out []drift.Finding
	for _, f := range fs {
		if f.Kind != drift.KindNoise && f.Kind != drift.KindBackend && !f.Ignored {
			out = append(out, f)
		}
	}
	return out
}

// webhookAlerts starts a signed webhook receiver and returns it with the
// config's notifiers: and alerts: blocks that send every incident to it
// (notifier "hook", its CA file written under e.root).
func webhookAlerts(t *testing.T, e *tfEnv) (*notifytest.WebhookServer, string) {
	t.Helper()
	hook := notifytest.NewWebhookServer(t, "")
	caFile := filepath.Join(e.root, "hook-ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}), 0o644))
	return hook, fmt.Sprintf(`notifiers:
  - { name: hook, type: webhook, webhook: { url_file: %s, secret_file: %s }, ca_file: %s }
alerts: { default_notifiers: [hook] }
`, hook.URLFile, hook.SecretFile, caFile)
}
