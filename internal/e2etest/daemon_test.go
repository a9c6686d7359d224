package e2etest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/tftest"

	"github.com/driftwatch/driftwatch/internal/browsertest"
)

// daemonProc is a real `driftwatch daemon` process on a random local port.
type daemonProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	logs   *syncBuffer
	exited chan struct{}
	code   int
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startDaemon starts the daemon and waits until /readyz answers 200.
func startDaemon(t *testing.T, cfg, listen string) *daemonProc {
	t.Helper()
	return startDaemonEnv(t, cfg, listen, nil)
}

// startDaemonEnv is startDaemon with extra environment variables.
func startDaemonEnv(t *testing.T, cfg, listen string, env []string) *daemonProc {
	t.Helper()
	return startDaemonProbe(t, cfg, listen, env, "/readyz")
}

// startDaemonProbe is startDaemonEnv waiting for probe to answer 200 (a
// standby is live, /healthz, but not ready).
func startDaemonProbe(t *testing.T, cfg, listen string, env []string, probe string) *daemonProc {
	t.Helper()
	d := &daemonProc{t: t, base: "http://" + listen, logs: &syncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(driftwatchBin, "daemon", "--config", cfg, "--log-level", "debug")
	d.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	d.cmd.Stdout = d.logs
	d.cmd.Stderr = d.logs
	require.NoError(t, d.cmd.Start())
	go func() {
		err := d.cmd.Wait()
		d.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			d.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				d.code = -int(ws.Signal())
			}
		}
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("daemon logs:\n%s", d.logs.String())
		}
	})
	d.eventually("daemon ready", 20*time.Second, func() bool {
		resp, err := http.Get(d.base + probe)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return d
}

func (d *daemonProc) eventually(what string, within time.Duration, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			d.t.Fatalf("daemon exited (code %d) while waiting for %s", d.code, what)
		default:
		}
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.t.Fatalf("timed out after %s waiting for %s", within, what)
}

// signal sends sig and waits for the process to exit.
func (d *daemonProc) stop(sig syscall.Signal, within time.Duration) int {
	d.t.Helper()
	require.NoError(d.t, d.cmd.Process.Signal(sig))
	select {
	case <-d.exited:
		return d.code
	case <-time.After(within):
		d.t.Fatalf("daemon did not exit within %s after %v", within, sig)
	}
	return 0
}

type apiWorkspace struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Counts struct {
		Drift, Pending, Forbidden int
	} `json:"counts"`
	Error     string `json:"error"`
	LastRunID string `json:"last_run_id"`
}

func (d *daemonProc) workspaces() map[string]apiWorkspace {
	d.t.Helper()
	var body struct {
		Workspaces []apiWorkspace `json:"workspaces"`
	}
	d.getJSON("/api/v1/workspaces", &body)
	out := map[string]apiWorkspace{}
	for _, w := range body.Workspaces {
		out[w.Name] = w
	}
	return out
}

type apiRun struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Trigger string `json:"trigger"`
	Error   string `json:"error"`
}

func (d *daemonProc) runs(ws string) []apiRun {
	d.t.Helper()
	var body struct {
		Runs []apiRun `json:"runs"`
	}
	d.getJSON("/api/v1/workspaces/"+ws+"/runs", &body)
	return body.Runs
}

func (d *daemonProc) getJSON(path string, v any) {
	d.t.Helper()
	resp, err := http.Get(d.base + path)
	require.NoError(d.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(d.t, 200, resp.StatusCode, "%s: %s", path, b)
	require.NoError(d.t, json.Unmarshal(b, v), string(b))
}

func (d *daemonProc) post(path, token string) int {
	d.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(d.t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// metric returns the value of one exposition line (name{labels}).
func (d *daemonProc) metric(series string) float64 {
	d.t.Helper()
	resp, err := http.Get(d.base + "/metrics")
	require.NoError(d.t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(d.t, err)
			return f
		}
	}
	return -1
}

func describeTF(dir string) string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		out = append(out, p.Name()+" "+cwd+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return strings.Join(out, "\n")
}

// tfProcesses counts the runs under dir that have a live Terraform/OpenTofu
// process: distinct run directories, since a process that is forking a
// provider briefly shows up twice.
func tfProcesses(dir string) int {
	runs := map[string]bool{}
	eachRunProcess(dir, func(rel, exe string) {
		if b := filepath.Base(exe); b == "terraform" || b == "tofu" {
			runs[strings.Split(rel, string(filepath.Separator))[0]] = true
		}
	})
	return len(runs)
}

// eachRunProcess calls fn with the working directory (relative to dir) and
// executable of every process working under dir.
func eachRunProcess(dir string, fn func(rel, exe string)) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		rel, rerr := filepath.Rel(dir, cwd)
		if err != nil || rerr != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		fn(rel, exe)
	}
}

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
	token := "dw-api-token-CANARY-12ab"
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
	require.Equal(t, 1.0, d.metric(`driftwatch_workspace_status{status="drift",workspace="drifted"}`))
	require.Equal(t, 1.0, d.metric(`driftwatch_workspace_findings{kind="drift",workspace="drifted"}`))
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
	require.Regexp(t, regexp.MustCompile(`unknown key \\"bogus\\"`), d.logs.String())

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

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestDaemonKill9Restart: a daemon killed with SIGKILL mid-run keeps its
// history; the restarted daemon marks the run interrupted and runs the
// workspace again.
func TestDaemonKill9Restart(t *testing.T) {
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	fast := e.workspace(t, "fast", map[string]string{"main.tf": `resource "terraform_data" "x" { input = 1 }`})
	e.apply(t, fast)
	e.workspace(t, "slow", map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "8s")})
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
workspaces:
  - name: fast
    source: { path: ./fast }
  - name: slow
    source: { path: ./slow }
`, listen, filepath.Join(e.root, "data", "driftwatch.db")))
	d := startDaemon(t, cfg, listen)
	d.eventually("fast finished, slow running", 60*time.Second, func() bool {
		ws := d.workspaces()
		runs := d.runs("slow")
		return ws["fast"].Status == "clean" && len(runs) == 1 && runs[0].Status == "running" && tfProcesses(e.workDir()) > 0
	})
	interruptedID := d.runs("slow")[0].ID
	fastRun := d.runs("fast")[0].ID
	require.Equal(t, -int(syscall.SIGKILL), d.stop(syscall.SIGKILL, 10*time.Second))
	// The killed daemon's run directory (code copy, generated var file)
	// stays on disk until a daemon of the same store starts again.
	left, _ := filepath.Glob(filepath.Join(e.workDir(), "dw-*"))
	require.NotEmpty(t, left, "kill -9 leaves its run directory behind")

	d2 := startDaemon(t, cfg, listen)
	for _, dir := range left {
		require.NoDirExists(t, dir, "the restarted daemon removes its predecessor's run directories")
	}
	// A second daemon on the same store is refused before it does anything.
	second := driftwatch(t, nil, "daemon", "--config", cfg)
	require.Equal(t, 1, second.code)
	require.Contains(t, second.stderr, "in use by another driftwatch daemon")
	require.Equal(t, fastRun, d2.runs("fast")[0].ID, "history survives kill -9")
	require.Len(t, d2.runs("fast"), 1, "a finished workspace is not re-run")
	d2.eventually("slow re-run finished", 60*time.Second, func() bool {
		runs := d2.runs("slow")
		return len(runs) == 2 && runs[0].Status == "clean"
	})
	runs := d2.runs("slow")
	require.Equal(t, "rerun", runs[0].Trigger)
	require.Equal(t, interruptedID, runs[1].ID)
	require.Equal(t, "interrupted", runs[1].Status)
	require.Equal(t, 0, d2.stop(syscall.SIGTERM, 30*time.Second))
	require.Zero(t, tfProcesses(e.workDir()), "no orphan Terraform after kill -9 and restart")
}

// TestDaemonLogsAndCancel follows a slow plan's log live over SSE, cancels
// the run through the API, and checks the run ends cancelled with no
// Terraform left, its stored log redacted.
func TestDaemonLogsAndCancel(t *testing.T) {
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	e.workspace(t, "slow", map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "60s") + `
variable "marker" { type = string }
resource "terraform_data" "m" {
  input = var.marker
}
`})
	e.workspace(t, "quick", map[string]string{"main.tf": `output "x" { value = 1 }` + "\n"})
	token := "dw-api-token-logs-77"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
max_concurrent_runs: 1
workspaces:
  - name: quick
    source: { path: ./quick }
  - name: slow
    source: { path: ./slow }
    vars: { marker: "CANARY-var-in-log-9d1" }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db")))
	d := startDaemon(t, cfg, listen)
	// The initial runs go one at a time: quick's, then slow's.
	d.eventually("quick's initial run done", 60*time.Second, func() bool {
		runs := d.runs("quick")
		return len(runs) == 1 && runs[0].Status == "clean"
	})
	var runID string
	d.eventually("slow run started", 60*time.Second, func() bool {
		runs := d.runs("slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			runID = runs[0].ID
			return true
		}
		return false
	})

	// Never hang: if the stream stalls, dump the daemon's goroutines into
	// its log (printed on failure) and fail.
	sseCtx, stopSSE := context.WithTimeout(t.Context(), 90*time.Second)
	defer stopSSE()
	stall := time.AfterFunc(85*time.Second, func() { _ = d.cmd.Process.Signal(syscall.SIGQUIT) })
	defer stall.Stop()
	// Logs need a read credential: the API token is one.
	req, _ := http.NewRequestWithContext(sseCtx, http.MethodGet, d.base+"/api/v1/runs/"+runID+"/logs", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no log without a read credential")
	req, _ = http.NewRequestWithContext(sseCtx, http.MethodGet, d.base+"/api/v1/runs/"+runID+"/logs", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "== plan ==") {
			break
		}
	}
	require.Contains(t, strings.Join(seen, "\n"), "== init ==")
	require.Equal(t, "running", d.runs("slow")[0].Status, "lines arrive while the run is still going")

	// The one run slot is taken: a run of quick is queued, with an id to
	// follow and cancel it by. Cancelled, it never starts.
	queued := triggerRun(t, d, "quick", token)
	var qrun apiRun
	d.getJSON("/api/v1/runs/"+queued, &qrun)
	require.Equal(t, apiRun{ID: queued, Status: "queued", Trigger: "manual"}, qrun)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n", logSnapshot(t, d, queued, token), "driftwatch logs ID")
	qreq, _ := http.NewRequestWithContext(sseCtx, http.MethodGet, d.base+"/api/v1/runs/"+queued+"/logs", nil)
	qreq.Header.Set("Accept", "text/event-stream")
	qreq.Header.Set("Authorization", "Bearer "+token)
	qresp, err := http.DefaultClient.Do(qreq)
	require.NoError(t, err)
	defer qresp.Body.Close()
	qsc := bufio.NewScanner(qresp.Body)
	require.True(t, qsc.Scan())
	require.Equal(t, "data: == queued (trigger manual): waiting for a run slot ==", qsc.Text(), "a follower waits on a queued run")
	time.Sleep(time.Second) // queued stays queued while the slot is taken
	d.getJSON("/api/v1/runs/"+queued, &qrun)
	require.Equal(t, "queued", qrun.Status)
	code, body := postBody(t, d, "/api/v1/runs/"+queued+"/cancel", token)
	require.Equal(t, http.StatusAccepted, code, body)
	require.JSONEq(t, `{"run": "`+queued+`", "status": "cancelled"}`, body)
	var qevents []string
	for qsc.Scan() {
		qevents = append(qevents, qsc.Text())
		if qsc.Text() == "event: end" {
			break
		}
	}
	require.True(t, qsc.Scan())
	require.Equal(t, `data: {"status":"cancelled"}`, qsc.Text(), "events: %q", qevents)
	d.getJSON("/api/v1/runs/"+queued, &qrun)
	require.Equal(t, apiRun{ID: queued, Status: "cancelled", Trigger: "manual", Error: "cancelled by request"}, qrun)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n== cancelled while queued: cancelled by request ==\n",
		logSnapshot(t, d, queued, token))
	require.Equal(t, http.StatusConflict, d.post("/api/v1/runs/"+queued+"/cancel", token), "cancelled already")
	require.Equal(t, 1, tfProcesses(e.workDir()), "only slow's Terraform runs:\n%s", describeTF(e.workDir()))
	require.Equal(t, "running", d.runs("slow")[0].Status, "the running run is not affected")
	require.Equal(t, "clean", d.workspaces()["quick"].Status, "a cancelled queued run changes no state")

	require.Equal(t, http.StatusUnauthorized, d.post("/api/v1/runs/"+runID+"/cancel", ""))
	require.Equal(t, http.StatusAccepted, d.post("/api/v1/runs/"+runID+"/cancel", token))
	var end string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if sc.Text() == "event: end" && sc.Scan() {
			end = sc.Text()
			break
		}
	}
	require.NoError(t, sseCtx.Err(), "the log stream stalled")
	require.Equal(t, `data: {"status":"cancelled"}`, end)
	d.eventually("run recorded cancelled", 30*time.Second, func() bool {
		r := d.runs("slow")
		return len(r) == 1 && r[0].Status == "cancelled"
	})
	require.Zero(t, tfProcesses(e.workDir()), "no Terraform left after cancel")
	require.Equal(t, "unknown", d.workspaces()["slow"].Status, "a cancelled run changes no state")

	stored := logSnapshot(t, d, runID, token)
	require.Contains(t, stored, "== plan ==")
	all := strings.Join(seen, "\n") + stored
	require.NotContains(t, all, "CANARY-var-in-log-9d1")
	require.Equal(t, http.StatusConflict, d.post("/api/v1/runs/"+runID+"/cancel", token), "not running any more")
	// The slot is free now: the cancelled run of quick still never starts.
	time.Sleep(2 * time.Second)
	require.Equal(t, []apiRun{{ID: queued, Status: "cancelled", Trigger: "manual", Error: "cancelled by request"}},
		d.runs("quick")[:1])
	require.Len(t, d.runs("quick"), 2)
	require.Zero(t, tfProcesses(e.workDir()))
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}

// triggerRun queues a run through the API and returns its id.
func triggerRun(t *testing.T, d *daemonProc, ws, token string) string {
	t.Helper()
	code, body := postBody(t, d, "/api/v1/workspaces/"+ws+"/runs", token)
	require.Equal(t, http.StatusAccepted, code, body)
	var out struct {
		Workspace string `json:"workspace"`
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	require.Equal(t, ws, out.Workspace)
	require.Equal(t, "queued", out.Status)
	require.Regexp(t, `^[0-9a-f]{16}$`, out.RunID)
	return out.RunID
}

// logSnapshot is what `driftwatch logs ID --token-file F` prints: the log
// so far (or the stored log), read with token.
func logSnapshot(t *testing.T, d *daemonProc, id, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.base+"/api/v1/runs/"+id+"/logs", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// postBody is post that returns the response body too.
func postBody(t *testing.T, d *daemonProc, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, d.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
