package e2etest

import (
	"bufio"
	"encoding/json"
	"errors"
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
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
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
	Error     string            `json:"error"`
	LastRunID string            `json:"last_run_id"`
	Labels    map[string]string `json:"labels"`
	Held      string            `json:"held"`
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
	eachRunProcess(dir, func(_ int, rel, exe string) {
		if toolExe.MatchString(filepath.Base(exe)) {
			runs[strings.Split(rel, string(filepath.Separator))[0]] = true
		}
	})
	return len(runs)
}

// toolExe matches the file names of the provisioned tools (terraform,
// tofu, terraform-1.14, tofu-1.12), not a provider's.
var toolExe = regexp.MustCompile(`^(terraform|tofu)(-\d+\.\d+)?$`)

// eachRunProcess calls fn with the pid, working directory (relative to
// dir) and executable of every process working under dir.
func eachRunProcess(dir string, fn func(pid int, rel, exe string)) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		rel, rerr := filepath.Rel(dir, cwd)
		if err != nil || rerr != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		fn(pid, rel, exe)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
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
