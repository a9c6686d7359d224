package e2etest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"

	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
)

const slowWorkspace = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
data "dwtest_sleep" "slow" {
  duration = "%s"
}
`

// TestDaemon drives a real daemon process over its HTTP API: scheduled runs,
// the concurrency cap, skipped overlaps, run-now auth, metrics, reload
// (good and bad), and a clean SIGTERM mid-plan.
func TestDaemon(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))

	drifted := e.workspace(t, "drifted", map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`})
	e.apply(t, drifted)
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "a.txt"), []byte("hand edit"), 0o644))
	clean := e.workspace(t, "clean", map[string]string{"main.tf": `resource "terraform_data" "x" { input = 1 }`})
	e.apply(t, clean)
	for _, n := range []string{"slow1", "slow2", "slow3"} {
		e.workspace(t, n, map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "3s")})
	}
	token := "dw-api-token-CANARY-12ab-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	listen := freePort(t)
	workspaces := func(extra string) string {
		return fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
max_concurrent_runs: 2
allow_sub_minute_schedules: true
defaults:
  schedule: "@every 2s"
workspaces:
  - name: drifted
    source: { path: ./drifted }
  - name: slow1
    source: { path: ./slow1 }
  - name: slow2
    source: { path: ./slow2 }
  - name: slow3
    source: { path: ./slow3 }
%s`, listen, tokenFile, filepath.Join(e.root, "data", "driftwatch.db"), extra)
	}
	cfg := e.config(t, workspaces(`  - name: clean
    source: { path: ./clean }
    schedule: "@hourly"
`))
	d := startDaemon(t, cfg, listen)

	// Watch the number of Terraform processes for the whole test.
	var maxProcs int
	var maxDetail string
	var mu sync.Mutex
	stopWatch := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(20 * time.Millisecond):
			}
			n := tfProcesses(e.workDir())
			mu.Lock()
			if n > maxProcs {
				maxProcs = n
				maxDetail = describeTF(e.workDir())
			}
			mu.Unlock()
		}
	}()

	// Never-run workspaces run at start; @every 2s keeps them going.
	d.eventually("drift and clean recorded", 60*time.Second, func() bool {
		ws := d.workspaces()
		return ws["drifted"].Status == "drift" && ws["clean"].Status == "clean" && ws["slow1"].Status == "clean"
	})
	ws := d.workspaces()
	require.Equal(t, 1, ws["drifted"].Counts.Drift)
	d.eventually("scheduled re-runs of drifted", 30*time.Second, func() bool { return len(d.runs("drifted")) >= 3 })
	for _, r := range d.runs("drifted") {
		if r.Status != "running" && r.Status != "queued" {
			require.Equal(t, "drift", r.Status)
		}
	}
	// slow* take 3s on a 2s schedule behind a cap of 2: slots are skipped.
	d.eventually("skipped slots counted", 30*time.Second, func() bool {
		return d.metric(`driftwatch_runs_skipped_total{workspace="slow1"}`) >= 1
	})
	require.Equal(t, 1.0, d.metric(`driftwatch_workspace_status{status="drift",workspace="drifted"}`)) //nolint:testifylint // float-compare: a 0/1 gauge, exact in float64
	require.Equal(t, 1.0, d.metric(`driftwatch_workspace_findings{kind="drift",workspace="drifted"}`)) //nolint:testifylint // float-compare: a whole-number count, exact in float64
	require.Greater(t, d.metric(`driftwatch_workspace_last_success_timestamp_seconds{workspace="clean"}`), 1e9)
	require.Greater(t, d.metric(`driftwatch_workspace_status_since_timestamp_seconds{workspace="clean"}`), 1e9)

	// The status page, rendered by a real browser against the real daemon.
	chromium := browsertest.Chromium(t)
	dom := browsertest.Run(t, chromium, d.base+"/", "--dump-dom")
	require.Contains(t, dom, "drifted")
	require.Regexp(t, `(?s)drifted.*slow1`, dom, "worst first: drift before clean")
	dom = browsertest.Run(t, chromium, d.base+"/workspaces/drifted", "--dump-dom")
	require.Contains(t, dom, "dwtest_file.a")
	require.Contains(t, dom, "content")
	require.NotContains(t, dom, "hand edit", "no attribute value on the page")
	shot := filepath.Join(browsertest.ArtifactDir(t), "daemon-status-page.png")
	browsertest.Run(t, chromium, d.base+"/", "--screenshot="+shot, "--window-size=1280,900")
	browsertest.RequirePNG(t, shot, browsertest.DriftOrange)

	// Run now: refused without the token, queued with it.
	cleanRuns := len(d.runs("clean"))
	require.Equal(t, http.StatusUnauthorized, d.post("/api/v1/workspaces/clean/runs", ""))
	require.Equal(t, http.StatusUnauthorized, d.post("/api/v1/workspaces/clean/runs", "wrong"))
	require.Equal(t, http.StatusNotFound, d.post("/api/v1/workspaces/nope/runs", token))
	require.Equal(t, http.StatusAccepted, d.post("/api/v1/workspaces/clean/runs", token))
	d.eventually("manual run recorded", 30*time.Second, func() bool {
		runs := d.runs("clean")
		return len(runs) > cleanRuns && runs[0].Trigger == "manual" && runs[0].Status == "clean"
	})

	// Reload: a valid config replaces the inventory (clean removed, added added).
	added := e.workspace(t, "added", map[string]string{"main.tf": `resource "terraform_data" "y" { input = 2 }`})
	e.apply(t, added)
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "  - name: clean\n    source: { path: ./clean }\n", "  - name: added\n    source: { path: ./added }\n", 1)), 0o644))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	d.eventually("reloaded inventory", 30*time.Second, func() bool {
		ws := d.workspaces()
		_, hasClean := ws["clean"]
		return !hasClean && ws["added"].Status == "clean"
	})
	// An invalid config is refused and the running one stays.
	require.NoError(t, os.WriteFile(cfg, []byte(mustRead(t, cfg)+"  - name: Bad_Name\n    bogus: 1\n"), 0o644))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	d.eventually("reload failure logged", 15*time.Second, func() bool { return strings.Contains(d.logs.String(), "config reload failed") })
	require.Contains(t, d.workspaces(), "added")
	require.Regexp(t, `unknown key \\"bogus\\"`, d.logs.String())

	mu.Lock()
	require.LessOrEqual(t, maxProcs, 2, "max_concurrent_runs holds: %s", maxDetail)
	require.GreaterOrEqual(t, maxProcs, 1)
	mu.Unlock()

	// SIGTERM mid-plan: exits 0 promptly, no Terraform left behind.
	d.eventually("a slow plan running", 30*time.Second, func() bool { return tfProcesses(e.workDir()) > 0 })
	code := d.stop(syscall.SIGTERM, 30*time.Second)
	close(stopWatch)
	require.Equal(t, 0, code, d.logs.String())
	require.Zero(t, tfProcesses(e.workDir()))
	require.NotContains(t, d.logs.String(), token, "the API token never reaches the logs")
	for _, line := range strings.Split(strings.TrimSpace(d.logs.String()), "\n") {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), "every log line is JSON: %q", line)
		if v["msg"] == "run started" {
			require.NotEmpty(t, v["workspace"])
			require.NotEmpty(t, v["run_id"])
		}
	}
}

// TestDaemonKill9Restart: a daemon killed with SIGKILL mid-plan keeps its
// history. The restarted daemon kills the provider its killed run left
// and removes the run's directory, records the run errored ("daemon
// restarted") and runs the workspace again, and runs the run that was
// queued under its own id.
func TestDaemonKill9Restart(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	// Unjailed: a jailed run's processes die with its PID namespace, so
	// only an unjailed run leaves a provider behind for the restart to
	// sweep.
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir(), sandbox: "off"}
	fast := e.workspace(t, "fast", map[string]string{"main.tf": `resource "terraform_data" "x" { input = 1 }`})
	e.apply(t, fast)
	e.workspace(t, "slow", map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "8s")})
	waiting := e.workspace(t, "waiting", map[string]string{"main.tf": `resource "terraform_data" "w" { input = 1 }`})
	e.apply(t, waiting)
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
max_concurrent_runs: 1
workspaces:
  - name: fast
    source: { path: ./fast }
  - name: slow
    source: { path: ./slow }
  - name: waiting
    source: { path: ./waiting }
`, listen, filepath.Join(e.root, "data", "driftwatch.db")))
	d := startDaemon(t, cfg, listen)
	d.eventually("fast finished, slow running, waiting queued", 60*time.Second, func() bool {
		ws := d.workspaces()
		slow, waiting := d.runs("slow"), d.runs("waiting")
		return ws["fast"].Status == "clean" && len(slow) == 1 && slow[0].Status == "running" && planProviderPIDs(e.workDir()) != nil &&
			len(waiting) == 1 && waiting[0].Status == "queued"
	})
	killedID := d.runs("slow")[0].ID
	queuedID := d.runs("waiting")[0].ID
	fastRun := d.runs("fast")[0].ID
	require.Equal(t, -int(syscall.SIGKILL), d.stop(syscall.SIGKILL, 10*time.Second))
	// The killed daemon's run directory (code copy, generated var file)
	// and its provider stay until a daemon of the same store starts again.
	left, _ := filepath.Glob(filepath.Join(e.workDir(), "dw-*"))
	require.NotEmpty(t, left, "kill -9 leaves its run directory behind")
	// Usually the plan's provider outlives the killed daemon, and the
	// restart must kill it. It can also end on its own right away, with
	// its Terraform (seen under load): then there is nothing to sweep, and
	// the end of the test still requires that nothing is left.
	orphans := providerPIDs(e.workDir())
	if len(orphans) == 0 {
		t.Log("the killed run's provider ended with it: nothing for the restart to sweep")
	}

	d2 := startDaemon(t, cfg, listen)
	for _, dir := range left {
		require.NoDirExists(t, dir, "the restarted daemon removes its predecessor's run directories")
	}
	for _, pid := range orphans {
		require.False(t, processAlive(pid), "the restarted daemon kills the orphaned provider %d", pid)
	}
	// A second daemon on the same store is refused before it does anything.
	second := driftwatch(t, nil, "daemon", "--config", cfg)
	require.Equal(t, 1, second.code)
	require.Contains(t, second.stderr, "in use by another driftwatch daemon")
	require.Equal(t, fastRun, d2.runs("fast")[0].ID, "history survives kill -9")
	require.Len(t, d2.runs("fast"), 1, "a finished workspace is not re-run")
	d2.eventually("the queued run ran, slow re-run finished", 90*time.Second, func() bool {
		slow, waiting := d2.runs("slow"), d2.runs("waiting")
		return len(slow) == 2 && slow[0].Status == "clean" && len(waiting) == 1 && waiting[0].Status == "clean"
	})
	runs := d2.runs("slow")
	require.Equal(t, "rerun", runs[0].Trigger)
	require.Equal(t, killedID, runs[1].ID)
	require.Equal(t, "errored", runs[1].Status)
	require.Equal(t, "daemon restarted: the run was in flight when the previous driftwatch process stopped", runs[1].Error)
	require.Equal(t, queuedID, d2.runs("waiting")[0].ID, "the queued run keeps its id across the restart")
	require.Equal(t, "initial", d2.runs("waiting")[0].Trigger)
	require.Equal(t, 0, d2.stop(syscall.SIGTERM, 30*time.Second))
	require.Zero(t, tfProcesses(e.workDir()), "no orphan Terraform after kill -9 and restart")
	require.Empty(t, providerPIDs(e.workDir()), "no orphan provider after kill -9 and restart")
}

// processAlive reports whether pid is a live process: a killed orphan is a
// zombie until its new parent reaps it.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z"))
}

// planProviderPIDs lists the provider processes under dir that are still
// there a second later: the slow plan's provider, not one Terraform starts
// and stops around it (to validate, or to read the schema), which a kill
// could miss.
func planProviderPIDs(dir string) []int {
	first := providerPIDs(dir)
	if first == nil {
		return nil
	}
	time.Sleep(time.Second)
	var out []int
	for _, pid := range providerPIDs(dir) {
		if slices.Contains(first, pid) {
			out = append(out, pid)
		}
	}
	return out
}

// providerPIDs lists the provider processes working under dir (nil: none).
func providerPIDs(dir string) []int {
	var pids []int
	eachRunProcess(dir, func(pid int, _, exe string) {
		if strings.HasPrefix(filepath.Base(exe), "terraform-provider-") {
			pids = append(pids, pid)
		}
	})
	return pids
}
