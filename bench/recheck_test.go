//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// BenchmarkRecheck measures, side by side in one run and with the real
// Terraform binary (the first of DRIFTWATCH_TF_BINARIES), what a daemon's
// scheduled re-check of one 15-resource workspace costs in CPU time
// against the Terraform work it cannot avoid:
//
//   - baseline clean: a bare `plan -lock=false` in an already initialised
//     copy of an unchanged workspace;
//   - baseline drift: `plan -out` + `show -json` of the saved plan in an
//     initialised copy of a drifted one (a file edited behind Terraform's
//     back);
//   - driftwatch: a long-running `driftwatch daemon` re-checking the same
//     two workspaces, each re-check queued through the API (as the
//     scheduler queues them) after a first run of each has finished.
//
// CPU time is user+sys of a process and of every descendant it waited for:
// for the baselines the rusage of each Terraform process (wait4 includes
// its providers), for the daemon the delta of utime+stime+cutime+cstime in
// /proc/PID/stat across one re-check, so whatever the daemon itself does
// for the run (scheduling, copying the source, parsing, store writes, the
// API polls that wait for the verdict) counts, and so do its Terraform
// processes (with the default sandbox, also the bwrap and launcher
// processes around each of them: a deployment pays for those). A daemon
// rather than `driftwatch audit` because a re-check is the daemon's job:
// anything it keeps between runs of a workspace (a kept working
// directory, a cached `version`) is what this measures, while each audit
// is a fresh process that pays its own start-up.
//
// Reported per op: the CPU seconds of each, recheck-clean-ratio and
// recheck-drift-ratio (driftwatch / baseline). The goal is <= 1.15 for
// both; the benchmark reports the figures and never fails on them.
//
//	go test -run '^$' -bench Recheck -benchtime 5x ./bench
func BenchmarkRecheck(b *testing.B) {
	bins := strings.Fields(os.Getenv("DRIFTWATCH_TF_BINARIES"))
	cli := os.Getenv("DRIFTWATCH_TF_CLI_CONFIG")
	if len(bins) == 0 || cli == "" {
		tftest.Unavailable(b, "needs DRIFTWATCH_TF_BINARIES and DRIFTWATCH_TF_CLI_CONFIG (make bench)")
	}
	tf := bins[0]
	root := b.TempDir()
	dwBin := filepath.Join(root, "driftwatch")
	if out, err := exec.Command("go", "build", "-o", dwBin, "github.com/driftwatch/driftwatch/cmd/driftwatch").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TF_CLI_CONFIG_FILE=" + cli, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	// tfRun runs Terraform in dir, requires exit code want, and returns
	// the CPU time of the process and the descendants it waited for.
	tfRun := func(dir string, want int, args ...string) time.Duration {
		cmd := exec.Command(tf, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			b.Fatalf("terraform %v: %v", args, err)
		}
		if code != want {
			b.Fatalf("terraform %v: exit %d, want %d\n%s", args, code, want, out)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}

	// Two identical workspaces of 15 resources on the offline providers,
	// applied once; then one file of "drift" is edited so that its plans
	// have a change to show.
	src := filepath.Join(root, "src")
	for _, name := range []string{"clean", "drift"} {
		dir := filepath.Join(src, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		main := `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
}
resource "dwtest_file" "f" {
  count    = 5
  filename = "` + dir + `/out-${count.index}.txt"
  content  = "v${count.index}"
}
resource "terraform_data" "d" {
  count = 10
  input = { index = count.index }
}
`
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
			b.Fatal(err)
		}
		tfRun(dir, 0, "init", "-input=false")
		tfRun(dir, 0, "apply", "-auto-approve", "-input=false")
	}
	if err := os.WriteFile(filepath.Join(src, "drift", "out-0.txt"), []byte("edited"), 0o644); err != nil {
		b.Fatal(err)
	}
	// The baselines run in their own initialised copies, so that their
	// plans never touch the daemon's sources.
	base := filepath.Join(root, "base")
	if out, err := exec.Command("cp", "-r", src, base).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	baseClean, baseDrift := filepath.Join(base, "clean"), filepath.Join(base, "drift")

	// The daemon: both workspaces on an hourly schedule, so that after
	// their first runs at start only the API's re-checks run. It is
	// configured as a deployment would be (startDaemon), with the sources'
	// directory visible in the run sandbox (the default, "auto") because
	// the dwtest_file resources live there.
	d := startDaemon(b, dwBin, root, daemonConfig{
		tf: tf, cli: cli, store: filepath.Join(root, "data", "driftwatch.db"), schedule: "@hourly",
		names: []string{"clean", "drift"}, dirs: []string{filepath.Join(src, "clean"), filepath.Join(src, "drift")},
		sandboxPaths: []string{src},
	})
	logs := d.logs
	client := apiclient.New(d.base, d.token, nil)
	ctx := context.Background()
	// recheck queues a run of name, waiting first for a run in flight (the
	// one at start), and returns the daemon's CPU time across the run.
	recheck := func(name string, want apiclient.Status) time.Duration {
		for {
			before := procCPU(b, d.pid)
			q, err := client.Trigger(ctx, name)
			var se *apiclient.StatusError
			if errors.As(err, &se) && errors.Is(se, apiclient.ErrConflict) && se.RunID != "" {
				waitRun(b, client, se.RunID, "", logs)
				continue
			}
			if err != nil {
				b.Fatalf("trigger %s: %v", name, err)
			}
			waitRun(b, client, q.RunID, want, logs)
			return procCPU(b, d.pid) - before
		}
	}
	// Warm up: the runs at start, the page cache, the baselines' plugin
	// caches.
	recheck("clean", apiclient.StatusClean)
	recheck("drift", apiclient.StatusDrift)
	tfRun(baseClean, 0, "plan", "-lock=false", "-input=false")
	tfRun(baseDrift, 2, "plan", "-detailed-exitcode", "-lock=false", "-input=false", "-out=p.tfplan")

	b.ResetTimer()
	var planClean, planDrift, dwClean, dwDrift time.Duration
	for range b.N {
		planClean += tfRun(baseClean, 0, "plan", "-lock=false", "-input=false")
		planDrift += tfRun(baseDrift, 2, "plan", "-detailed-exitcode", "-lock=false", "-input=false", "-out=p.tfplan")
		planDrift += tfRun(baseDrift, 0, "show", "-json", "p.tfplan")
		dwClean += recheck("clean", apiclient.StatusClean)
		dwDrift += recheck("drift", apiclient.StatusDrift)
	}
	b.StopTimer()
	f := float64(b.N)
	b.ReportMetric(planClean.Seconds()/f, "baseline-clean-cpu-s/op")
	b.ReportMetric(planDrift.Seconds()/f, "baseline-drift-cpu-s/op")
	b.ReportMetric(dwClean.Seconds()/f, "recheck-clean-cpu-s/op")
	b.ReportMetric(dwDrift.Seconds()/f, "recheck-drift-cpu-s/op")
	b.ReportMetric(dwClean.Seconds()/planClean.Seconds(), "recheck-clean-ratio")
	b.ReportMetric(dwDrift.Seconds()/planDrift.Seconds(), "recheck-drift-ratio")
}

// waitRun polls run id until it has finished and, unless want is empty,
// requires its verdict to be want: a benchmark of a failing run would
// measure the wrong work. It polls every 100 ms, not faster: each poll is
// daemon CPU counted in the re-check.
func waitRun(b *testing.B, c *apiclient.Client, id string, want apiclient.Status, logs fmt.Stringer) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		r, err := c.GetRun(context.Background(), id)
		if err != nil {
			b.Fatalf("run %s: %v", id, err)
		}
		if r.Finished() {
			if want != "" && r.Status != want {
				b.Fatalf("run %s of %s: %s, want %s: %s\ndaemon logs:\n%s", id, r.Workspace, r.Status, want, r.Raw, logs)
			}
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s: not finished after 5m", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// procCPU is the CPU time of process pid and of the children it has
// waited for (utime+stime+cutime+cstime of /proc/PID/stat).
func procCPU(b *testing.B, pid int) time.Duration {
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
	var ticks int64
	for _, f := range fields[11:15] { // utime stime cutime cstime
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("daemon CPU: /proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / time.Duration(clockTicks())
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat times.
var clockTicks = sync.OnceValue(func() int64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
})

// lockedBuffer holds the daemon's output, written by exec's copier while
// a failing benchmark may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// freeAddr is a free 127.0.0.1 port for the daemon to listen on.
func freeAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
