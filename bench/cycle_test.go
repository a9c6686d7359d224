//go:build linux

package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

const (
	// idleSettle is how long BenchmarkDaemonIdle1000 lets the daemon
	// settle after /readyz before it measures: start-up work (config,
	// store, sandbox probe) is not idle.
	idleSettle = 10 * time.Second
	// idleWindow is one op of BenchmarkDaemonIdle1000. At USER_HZ 100 one
	// clock tick is 1/6000 of it, so 1% of a core is 60 ticks.
	idleWindow = 60 * time.Second
	// cycleRunners is max_concurrent_runs in BenchmarkDaemonCycle1000.
	cycleRunners = 4
	// cycleSleep is the latency of each run's dwtest_sleep data source: a
	// provider call that waits rather than computes, so that Terraform's
	// own CPU stays small and the run still holds a runner for a while.
	cycleSleep = "1s"
)

// BenchmarkDaemonIdle1000 measures what a `driftwatch daemon` with 1,000
// scheduled workspaces costs while none of them is due: the CPU time
// (utime+stime of /proc/PID/stat: the daemon process itself, not its
// children) over a 60 s window that starts 10 s after /readyz, and its
// resident set size at the end. Every workspace is on "@every 24h", which
// does not come due during the measurement, and the store is seeded with a
// clean run of each before the daemon starts, as a restarted deployment's
// store would be: a workspace that was never checked runs at start, and
// that would be a cycle, not idleness. The benchmark then requires, through
// GET /api/v1/workspaces, that no run happened.
//
// One op is one 60 s window. Reported: idle-cpu-percent-of-core (the goal
// is < 1) and rss-MB. The benchmark reports the figures and never fails on
// them. DRIFTWATCH_BENCH_WORKSPACES overrides the workspace count.
//
//	go test -run '^$' -bench DaemonIdle1000 -benchtime 1x ./bench
func BenchmarkDaemonIdle1000(b *testing.B) {
	n := benchEnvInt(b, "DRIFTWATCH_BENCH_WORKSPACES", 1000)
	tf, cli := benchTools(b)
	root := b.TempDir()
	dwBin := buildDriftwatch(b, root)
	names, dirs := writeWorkspaces(b, filepath.Join(root, "src"), n, "")
	storePath := filepath.Join(root, "data", "driftwatch.db")
	seeded := time.Now().Add(-time.Hour)
	seedStore(b, storePath, names, seeded)
	d := startDaemon(b, dwBin, root, daemonConfig{
		tf: tf, cli: cli, store: storePath, schedule: "@every 24h", names: names, dirs: dirs,
	})
	time.Sleep(idleSettle)

	b.ResetTimer()
	var own time.Duration
	for range b.N {
		before, _ := daemonCPU(b, d.pid)
		time.Sleep(idleWindow)
		after, _ := daemonCPU(b, d.pid)
		own += after - before
	}
	b.StopTimer()
	rss := daemonRSS(b, d.pid)

	// The figure is idleness only if nothing ran: every workspace's last
	// run must still be the seeded one.
	ws := d.workspaces(b)
	if len(ws) != n {
		b.Fatalf("GET /api/v1/workspaces: %d workspaces, want %d", len(ws), n)
	}
	for _, w := range ws {
		if w.LastRunAt != nil && w.LastRunAt.After(seeded.Add(time.Second)) {
			b.Fatalf("workspace %s ran during the idle benchmark (last run %s); daemon logs:\n%s", w.Name, w.LastRunAt, d.logs)
		}
	}
	b.ReportMetric(100*own.Seconds()/(idleWindow.Seconds()*float64(b.N)), "idle-cpu-percent-of-core")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
}

// BenchmarkDaemonCycle1000 measures one full scheduling cycle of a
// `driftwatch daemon` with 1,000 workspaces on "@every 15m", spread over the
// interval by a 15-minute defaults.jitter, with 4 runners
// (max_concurrent_runs), configured as a deployment would be (shared
// plugin_cache_dir, work_dir, the default sandbox). Each workspace is a
// tiny real Terraform root, applied beforehand: a dwtest_sleep data source
// that waits 1 s while it is read and one terraform_data resource, so each
// run is a real init + plan + show -json whose verdict is clean. The store
// is seeded with a clean run of each workspace, as a restarted
// deployment's is, so that nothing runs at start (a never-checked
// workspace would) and the cycle is the steady state.
//
// "@every" slots are anchored at the daemon's start, so the first slots
// come one interval after it and the cycle measured is the first: each
// workspace's slot is its next_run in GET /api/v1/workspaces, read just
// after /readyz, and the workspace is checked in the cycle if a scheduled
// run of it started at or after that slot, and finished, not errored,
// before its next slot (a run still queued or running then makes the
// scheduler skip that slot). The measurement runs from the first slot
// until every workspace's run of the cycle has finished, or until the
// last slot's next slot plus a minute; in that tail, and only there, the
// benchmark polls GET /api/v1/workspaces every 2 s, which the daemon's CPU
// includes. With -benchtime Nx, N consecutive cycles are measured (after
// go test's first call, which measures one).
//
// Reported: per cycle, cycle-missed-workspaces (the goal is 0: every
// workspace checked each 15-minute cycle with 4 runners) and skipped
// (driftwatch_runs_skipped_total); over the measurement, runs/min (the
// scheduled runs that finished; workspaces per interval when the daemon
// keeps up), daemon-cpu-percent-of-core (the daemon process's own
// utime+stime over the wall time), daemon-cpu-ms/run, total-cpu-s/run
// (the daemon and every process it waited for: Terraform, providers, the
// sandbox), mean-run-s (the runs' duration_seconds) and
// max-finish-after-slot-s (the latest a run finished after its slot; it
// must stay below the interval). ns/op is the wall time of the
// measurement. The benchmark reports the figures and never fails on them;
// it fails on an errored run, whose cost is the wrong one.
//
// DRIFTWATCH_BENCH_WORKSPACES (default 1000) and DRIFTWATCH_BENCH_CADENCE
// (a Go duration, at least 1m, default 15m; also the jitter) make it small
// enough to try: 40 workspaces at 1m take under three minutes. The full
// size takes two intervals plus the tail, a little over half an hour when
// the machine keeps up, and up to three intervals when it does not, so it
// needs a -timeout above go test's default 10m: below N+2 intervals plus
// 5 minutes it skips, saying so (as under make bench).
//
//	go test -run '^$' -bench DaemonCycle1000 -benchtime 1x -timeout 60m ./bench
//	DRIFTWATCH_BENCH_WORKSPACES=40 DRIFTWATCH_BENCH_CADENCE=1m go test -run '^$' -bench DaemonCycle1000 -benchtime 1x ./bench
func BenchmarkDaemonCycle1000(b *testing.B) {
	n := benchEnvInt(b, "DRIFTWATCH_BENCH_WORKSPACES", 1000)
	cadence := benchEnvDuration(b, "DRIFTWATCH_BENCH_CADENCE", 15*time.Minute)
	if cadence < time.Minute {
		b.Fatalf("DRIFTWATCH_BENCH_CADENCE %s: at least 1m (the daemon refuses shorter schedules)", cadence)
	}
	// The tail ends at the latest one interval after the last slot, which
	// comes up to two intervals after the start.
	requireTimeout(b, time.Duration(b.N+2)*cadence+5*time.Minute)
	tf, cli := benchTools(b)
	root := b.TempDir()
	dwBin := buildDriftwatch(b, root)

	// One root applied once; every workspace is a copy of its code, lock
	// file and state, so that every run plans no change.
	tmpl := filepath.Join(root, "template")
	if err := os.MkdirAll(tmpl, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmpl, "main.tf"), []byte(cycleMainTF), 0o644); err != nil {
		b.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TF_CLI_CONFIG_FILE=" + cli, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	for _, args := range [][]string{{"init", "-input=false"}, {"apply", "-auto-approve", "-input=false"}} {
		cmd := exec.Command(tf, args...)
		cmd.Dir, cmd.Env = tmpl, env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("terraform %v: %v\n%s", args, err, out)
		}
	}
	names, dirs := writeWorkspaces(b, filepath.Join(root, "src"), n, tmpl)
	storePath := filepath.Join(root, "data", "driftwatch.db")
	seedStore(b, storePath, names, time.Now().Add(-time.Hour))
	d := startDaemon(b, dwBin, root, daemonConfig{
		tf: tf, cli: cli, store: storePath, schedule: "@every " + cadence.String(), jitter: cadence,
		runners: cycleRunners, names: names, dirs: dirs,
	})

	// Each workspace's first slot. next_run is in whole seconds, the slot
	// up to a second later.
	slot := map[string]time.Time{}
	var first, last time.Time
	for _, w := range d.workspaces(b) {
		if w.NextRun == nil {
			b.Fatalf("workspace %s has no next_run", w.Name)
		}
		slot[w.Name] = *w.NextRun
		if first.IsZero() || w.NextRun.Before(first) {
			first = *w.NextRun
		}
		if w.NextRun.After(last) {
			last = *w.NextRun
		}
	}
	if len(slot) != n {
		b.Fatalf("GET /api/v1/workspaces: %d workspaces, want %d", len(slot), n)
	}
	skippedBefore := d.skipped(b)
	time.Sleep(time.Until(first.Add(-time.Second)))

	b.ResetTimer()
	ownBefore, allBefore := daemonCPU(b, d.pid)
	start := time.Now()
	cycles := time.Duration(b.N)
	// The last cycle's runs: none can have finished before its last slot.
	time.Sleep(time.Until(last.Add((cycles - 1) * cadence)))
	hardEnd := last.Add(cycles*cadence + time.Minute)
	for {
		done := true
		for _, w := range d.workspaces(b) {
			if w.LastRunAt == nil || w.LastRunAt.Before(slot[w.Name].Add((cycles-1)*cadence-time.Second)) {
				done = false
				break
			}
		}
		if done || time.Now().After(hardEnd) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	ownAfter, allAfter := daemonCPU(b, d.pid)
	wall := time.Since(start)
	b.StopTimer()
	skipped := d.skipped(b) - skippedBefore

	// Which workspace was checked in which cycle, from its run history.
	var runs, missed int
	var runTime, latest time.Duration
	end := start.Add(wall)
	for _, name := range names {
		hist := d.runs(b, name, b.N+10)
		for k := range b.N {
			from := slot[name].Add(time.Duration(k) * cadence)
			to := from.Add(cadence)
			checked := false
			for _, r := range hist {
				if r.Trigger != "schedule" || r.StartedAt == nil || r.StartedAt.Before(from.Add(-time.Second)) || !r.StartedAt.Before(to) {
					continue
				}
				if r.Status == drift.StatusErrored {
					b.Fatalf("run %s of %s errored: %s\ndaemon logs:\n%s", r.ID, name, r.Error, d.logs)
				}
				if r.FinishedAt == nil || r.FinishedAt.After(end) {
					continue
				}
				runs++
				if r.DurationSeconds != nil {
					runTime += time.Duration(*r.DurationSeconds * float64(time.Second))
				}
				latest = max(latest, r.FinishedAt.Sub(from))
				if !r.FinishedAt.After(to.Add(time.Second)) {
					checked = true
				}
			}
			if !checked {
				missed++
			}
		}
	}
	if runs == 0 {
		b.Fatalf("no scheduled run finished; daemon logs:\n%s", d.logs)
	}
	f := float64(b.N)
	b.ReportMetric(float64(missed)/f, "cycle-missed-workspaces")
	b.ReportMetric(float64(runs)/wall.Minutes(), "runs/min")
	b.ReportMetric(100*(ownAfter-ownBefore).Seconds()/wall.Seconds(), "daemon-cpu-percent-of-core")
	b.ReportMetric(1000*(ownAfter-ownBefore).Seconds()/float64(runs), "daemon-cpu-ms/run")
	b.ReportMetric((allAfter-allBefore).Seconds()/float64(runs), "total-cpu-s/run")
	b.ReportMetric(runTime.Seconds()/float64(runs), "mean-run-s")
	b.ReportMetric(latest.Seconds(), "max-finish-after-slot-s")
	b.ReportMetric(skipped/f, "skipped")
}

// cycleMainTF is every workspace of BenchmarkDaemonCycle1000: one provider
// call that waits cycleSleep, one resource in state.
const cycleMainTF = `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
data "dwtest_sleep" "s" {
  duration = "` + cycleSleep + `"
}
resource "terraform_data" "d" {
  input = "bench"
}
`

// requireTimeout skips the benchmark unless go test's -timeout (default
// 10m) is 0 or leaves it need: a benchmark killed by the timeout loses its
// figures.
func requireTimeout(b *testing.B, need time.Duration) {
	b.Helper()
	f := flag.Lookup("test.timeout")
	if f == nil {
		return
	}
	t, err := time.ParseDuration(f.Value.String())
	if err != nil || t == 0 || t >= need {
		return
	}
	b.Skipf("needs go test -timeout %s or more, has %s", need.Round(time.Minute), t)
}

// benchTools returns the Terraform binary (the first of
// DRIFTWATCH_TF_BINARIES) and the CLI config, or skips as tftest says.
func benchTools(b *testing.B) (tf, cli string) {
	b.Helper()
	bins := strings.Fields(os.Getenv("DRIFTWATCH_TF_BINARIES"))
	cli = os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if len(bins) == 0 || cli == "" {
		tftest.Unavailable(b, "needs DRIFTWATCH_TF_BINARIES and DRIFTWATCH_TF_CLI_CONFIG (make bench)")
	}
	return bins[0], cli
}

// buildDriftwatch builds the driftwatch binary into dir.
func buildDriftwatch(b *testing.B, dir string) string {
	b.Helper()
	bin := filepath.Join(dir, "driftwatch")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/driftwatch/driftwatch/cmd/driftwatch").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// writeWorkspaces makes n workspace directories under dir, ws-0000 and on,
// each a copy of the regular files of template (the code alone is
// cycleMainTF when template is empty), and returns their names and paths.
func writeWorkspaces(b *testing.B, dir string, n int, template string) (names, dirs []string) {
	b.Helper()
	files := map[string][]byte{"main.tf": []byte(cycleMainTF)}
	if template != "" {
		entries, err := os.ReadDir(template)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue // .terraform: each run initialises its own
			}
			data, err := os.ReadFile(filepath.Join(template, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			files[e.Name()] = data
		}
	}
	for i := range n {
		name := fmt.Sprintf("ws-%04d", i)
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for f, data := range files {
			if err := os.WriteFile(filepath.Join(d, f), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		names, dirs = append(names, name), append(dirs, d)
	}
	return names, dirs
}

// seedStore records a finished clean run of every workspace in names,
// started at at, in the store file path, as a previous daemon would have:
// the daemon then knows each workspace and does not run it at start.
func seedStore(b *testing.B, path string, names []string, at time.Time) {
	b.Helper()
	ctx := b.Context()
	st, err := sqlite.Open(ctx, path, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for _, name := range names {
		r := store.Run{ID: drift.NewRunID(), Workspace: name, Trigger: "schedule", StartedAt: at, Tool: "terraform"}
		if err := st.StartRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status, r.FinishedAt = drift.StatusClean, at.Add(5*time.Second)
		if _, _, err := st.FinishRun(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}

// daemonConfig is what differs between the daemons of these benchmarks.
type daemonConfig struct {
	tf, cli, store string
	schedule       string
	jitter         time.Duration // 0: none
	runners        int           // 0: the default
	names, dirs    []string
	sandboxPaths   []string // terraform.sandbox_paths
}

// runningDaemon is a started `driftwatch daemon`, stopped by the
// benchmark's cleanup.
type runningDaemon struct {
	pid   int
	base  string // http://ADDR
	token string // the API token file
	logs  *lockedBuffer
}

// startDaemon writes a config for c under root, starts the daemon with
// --log-level warn and waits for /readyz. The config is a deployment's: a
// shared plugin cache, a work_dir, an API token file.
func startDaemon(b *testing.B, bin, root string, c daemonConfig) *runningDaemon {
	b.Helper()
	listen := freeAddr(b)
	tokenFile := filepath.Join(root, "api-token")
	if err := os.WriteFile(tokenFile, []byte(fmt.Sprintf("bench-token-%032d\n", time.Now().UnixNano())), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{"plugin-cache", "runs"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var y strings.Builder
	fmt.Fprintf(&y, `terraform:
  binary: %s
  cli_config_file: %s
  plugin_cache_dir: %s
  work_dir: %s
  sandbox_paths: [%s]
server: { listen: "%s", token_file: %s }
store: { path: %s }
`, c.tf, c.cli, filepath.Join(root, "plugin-cache"), filepath.Join(root, "runs"), strings.Join(c.sandboxPaths, ", "), listen, tokenFile, c.store)
	if c.runners > 0 {
		fmt.Fprintf(&y, "max_concurrent_runs: %d\n", c.runners)
	}
	fmt.Fprintf(&y, "defaults:\n  schedule: %q\n", c.schedule)
	if c.jitter > 0 {
		fmt.Fprintf(&y, "  jitter: %s\n", c.jitter)
	}
	y.WriteString("workspaces:\n")
	for i, name := range c.names {
		fmt.Fprintf(&y, "  - name: %s\n    source: { path: %s }\n", name, c.dirs[i])
	}
	cfg := filepath.Join(root, "driftwatch.yaml")
	if err := os.WriteFile(cfg, []byte(y.String()), 0o644); err != nil {
		b.Fatal(err)
	}

	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "daemon", "--config", cfg, "--log-level", "warn")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
	cmd.Stdout, cmd.Stderr = logs, logs
	// A benchmark killed by go test's -timeout runs no cleanup: the
	// daemon, and the runs it would go on starting, must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	d := &runningDaemon{pid: cmd.Process.Pid, base: "http://" + listen, token: tokenFile, logs: logs}
	ready := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(d.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case <-exited:
			b.Fatalf("daemon exited; logs:\n%s", logs)
		default:
		}
		if time.Now().After(ready) {
			b.Fatalf("daemon not ready after 2m; logs:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiWorkspace is the part of GET /api/v1/workspaces these benchmarks
// read (internal/apiclient has no listing).
type apiWorkspace struct {
	Name      string     `json:"name"`
	LastRunAt *time.Time `json:"last_run_at"`
	NextRun   *time.Time `json:"next_run"`
}

// apiRun is the part of GET /api/v1/workspaces/NAME/runs these
// benchmarks read.
type apiRun struct {
	ID              string       `json:"id"`
	Trigger         string       `json:"trigger"`
	Status          drift.Status `json:"status"`
	StartedAt       *time.Time   `json:"started_at"`
	FinishedAt      *time.Time   `json:"finished_at"`
	DurationSeconds *float64     `json:"duration_seconds"`
	Error           string       `json:"error"`
}

// workspaces is GET /api/v1/workspaces.
func (d *runningDaemon) workspaces(b *testing.B) []apiWorkspace {
	b.Helper()
	var out struct {
		Workspaces []apiWorkspace `json:"workspaces"`
	}
	d.get(b, "/api/v1/workspaces", &out)
	return out.Workspaces
}

// runs is GET /api/v1/workspaces/NAME/runs, newest first.
func (d *runningDaemon) runs(b *testing.B, name string, limit int) []apiRun {
	b.Helper()
	var out struct {
		Runs []apiRun `json:"runs"`
	}
	d.get(b, fmt.Sprintf("/api/v1/workspaces/%s/runs?limit=%d", name, limit), &out)
	return out.Runs
}

// get decodes the JSON answer of GET path into out.
func (d *runningDaemon) get(b *testing.B, path string, out any) {
	b.Helper()
	resp, err := http.Get(d.base + path)
	if err != nil {
		b.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		b.Fatalf("GET %s: %v", path, err)
	}
}

// skipped is the sum of driftwatch_runs_skipped_total over workspaces.
func (d *runningDaemon) skipped(b *testing.B) float64 {
	b.Helper()
	resp, err := http.Get(d.base + "/metrics")
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	var sum float64
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, "driftwatch_runs_skipped_total") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			b.Fatalf("/metrics: %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// daemonCPU is the CPU time of process pid itself (utime+stime of
// /proc/PID/stat) and with the children it has waited for (plus cutime
// and cstime), read at one instant.
func daemonCPU(b *testing.B, pid int) (own, all time.Duration) {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("daemon CPU: %v", err)
	}
	// The command name may hold spaces: the fields follow its last ')'.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 15 {
		b.Fatalf("daemon CPU: short /proc/%d/stat", pid)
	}
	var ticks [4]int64
	for i, f := range fields[11:15] { // utime stime cutime cstime
		if ticks[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			b.Fatalf("daemon CPU: /proc/%d/stat: %v", pid, err)
		}
	}
	tick := time.Second / time.Duration(clockTicks())
	own = time.Duration(ticks[0]+ticks[1]) * tick
	return own, own + time.Duration(ticks[2]+ticks[3])*tick
}

// daemonRSS is the resident set size of process pid (VmRSS), in bytes.
func daemonRSS(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("daemon RSS: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest) // "12345 kB"
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				b.Fatalf("daemon RSS: %q: %v", line, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("daemon RSS: no VmRSS in /proc/%d/status", pid)
	return 0
}

// benchEnvInt is the positive integer in the environment variable key, or
// def when it is unset.
func benchEnvInt(b *testing.B, key string, def int) int {
	b.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", key, v)
	}
	return n
}

// benchEnvDuration is the Go duration in the environment variable key, or
// def when it is unset.
func benchEnvDuration(b *testing.B, key string, def time.Duration) time.Duration {
	b.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive Go duration", key, v)
	}
	return d
}
