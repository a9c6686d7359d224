//go:build linux

package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// BenchmarkKubeThroughput plays the kubelet, and the pods it runs, in a
// process of its own: this test binary again, running only
// BenchmarkPlayedKubelet, so that the benchmark's process is the daemon's
// side alone (the runner, its informer and the Receiver the pods post to)
// and its CPU time is the runner's.
const (
	// envBenchKubeconfig and envBenchNamespace tell BenchmarkPlayedKubelet
	// the cluster and namespace whose kubelet it plays.
	envBenchKubeconfig = "DRIFTWATCH_BENCH_KUBELET_KUBECONFIG"
	envBenchNamespace  = "DRIFTWATCH_BENCH_KUBELET_NAMESPACE"
	// kubeletPlaying is the line BenchmarkPlayedKubelet prints once it
	// plays the kubelet.
	kubeletPlaying = "driftwatch-bench: kubelet playing"
	// benchWorkspaces is how many workspaces the benchmark checks.
	benchWorkspaces = 200
)

// benchWorkspace is the name of the benchmark's nth workspace.
func benchWorkspace(n int64) string { return fmt.Sprintf("ws-%03d", n%benchWorkspaces) }

// BenchmarkPlayedKubelet measures nothing of its own: it is the played
// kubelet of BenchmarkKubeThroughput, which runs it in a process apart
// (startKubeletProcess), until the benchmark closes its stdin. Every pod
// runs the pod's real code with a stand-in plan that returns at once.
// Without the cluster that benchmark names (envBenchKubeconfig) it has
// nothing to play and returns.
func BenchmarkPlayedKubelet(t *testing.B) {
	kubeconfig := os.Getenv(envBenchKubeconfig)
	if kubeconfig == "" {
		return
	}
	c, err := kubetest.Connect(kubeconfig)
	require.NoError(t, err)
	cs, err := c.Clientset()
	require.NoError(t, err)
	k := &kubelet{plays: map[string]kubetest.ContainersFunc{}}
	stand := realPod(quietTB{t}, cs, runnerFunc(func(_ context.Context, req terraform.Request) (runner.Result, error) {
		return canned(req.RunID).Unpack()
	}), nil)
	for i := range int64(benchWorkspaces) {
		k.setContainers(benchWorkspace(i), stand)
	}
	c.PlayKubeletContainers(t, os.Getenv(envBenchNamespace), k.run)
	fmt.Println(kubeletPlaying)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark is done
}

// kubeletProcess is BenchmarkPlayedKubelet running in a process of its own.
type kubeletProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	out   *watchedBuffer
	done  chan struct{} // closed when it has exited; err is then set
	err   error
	once  sync.Once
}

// startKubeletProcess starts the played kubelet of namespace ns of the
// cluster kubeconfig names, and waits until it plays. It is stopped when b
// ends, if stop did not stop it before.
func startKubeletProcess(b *testing.B, kubeconfig, ns string) *kubeletProcess {
	exe, err := os.Executable()
	require.NoError(b, err)
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^BenchmarkPlayedKubelet$", "-test.benchtime=1x", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), envBenchKubeconfig+"="+kubeconfig, envBenchNamespace+"="+ns)
	// It dies with the benchmark, even one killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &kubeletProcess{cmd: cmd, out: &watchedBuffer{want: kubeletPlaying, seen: make(chan struct{})}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	p.stdin, err = cmd.StdinPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	b.Cleanup(func() {
		if err := p.end(); err != nil {
			b.Errorf("played kubelet process: %v\n%s", err, p.out)
		}
	})
	select {
	case <-p.out.seen:
	case <-p.done:
		b.Fatalf("played kubelet process ended before it played: %v\n%s", p.err, p.out)
	case <-time.After(time.Minute):
		b.Fatalf("played kubelet process did not play within a minute\n%s", p.out)
	}
	return p
}

// cpu is the process's CPU time so far, all its threads.
func (p *kubeletProcess) cpu(b *testing.B) time.Duration {
	_, _, cpu, ok := procStat(strconv.Itoa(p.cmd.Process.Pid))
	require.True(b, ok, "played kubelet process gone\n%s", p.out)
	return cpu
}

// stop ends the process and fails b unless it passed (the played kubelet
// fails it on an error writing a pod's status).
func (p *kubeletProcess) stop(b *testing.B) {
	require.NoError(b, p.end(), "played kubelet process\n%s", p.out)
}

// end closes the process's stdin and waits for it to exit (a minute at
// most, then kills it); the first call's result is kept.
func (p *kubeletProcess) end() error {
	p.once.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p.err
}

// watchedBuffer keeps a process's output and closes seen once a line of it
// is want.
type watchedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	got  bool
}

func (w *watchedBuffer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if !w.got && strings.Contains(w.buf.String(), w.want+"\n") {
		w.got = true
		close(w.seen)
	}
	return len(b), nil
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
