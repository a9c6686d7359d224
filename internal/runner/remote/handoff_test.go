//go:build linux

package remote

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// startReporter runs a Reporter for specPath on a fresh socket and returns
// the socket and the reporter's error, once it returns.
func startReporter(t *testing.T, specPath string) (string, <-chan error) {
	t.Helper()
	sock := socketPath(t)
	rp := &Reporter{Poster: &Poster{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}, Checker: fastChecker()}
	errc := make(chan error, 1)
	go func() { errc <- rp.Report(t.Context(), specPath, sock) }()
	return sock, errc
}

// dial connects to the reporter's socket as the runner does, waiting for
// it to listen.
func dial(t *testing.T, sock string) *handoff {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h, err := dialHandoff(ctx, sock)
	require.NoError(t, err)
	t.Cleanup(h.close)
	return h
}

// TestReporterAcceptsOneConnection: the first connection is the runner's
// (made before any process of the run exists); the reporter then closes
// its listener, so a process of the run connecting later is refused and
// cannot hand over a result of its own.
func TestReporterAcceptsOneConnection(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	specPath, _, hash := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), expires)
	ch, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)
	sock, errc := startReporter(t, specPath)

	first := dial(t, sock)
	// The listener is closed right after the first accept (and the socket
	// file removed with it).
	require.Eventually(t, func() bool {
		_, err := os.Stat(sock)
		return os.IsNotExist(err)
	}, 5*time.Second, 10*time.Millisecond, "socket file still there")
	second, err := net.DialTimeout("unix", sock, time.Second)
	if err == nil {
		second.Close()
		t.Fatal("a second connection to the reporter succeeded")
	}
	// Even with a socket file planted at the path, nobody listens there.
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ln.Close()

	require.NoError(t, first.deliver(t.Context(), okResult(t, "pod-run")))
	require.NoError(t, <-errc)
	require.Equal(t, okResult(t, "pod-run"), (<-ch).Result)
}

// TestReporterRunnerEndsWithoutResult: a runner whose connection ends
// before it hands a result over (killed, crashed) makes the reporter fail:
// nothing is posted, and the pod fails.
func TestReporterRunnerEndsWithoutResult(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	specPath, _, hash := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), expires)
	ch, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)
	sock, errc := startReporter(t, specPath)
	dial(t, sock).close()
	require.ErrorContains(t, <-errc, "the runner closed the handoff without a result")
	require.Empty(t, ch)

	t.Run("invalid result", func(t *testing.T) {
		sock, errc := startReporter(t, specPath)
		err := dial(t, sock).deliver(t.Context(), okResult(t, "another-run"))
		require.ErrorContains(t, err, `the reporter refused the result: result is for run "another-run", not "pod-run"`)
		require.ErrorContains(t, <-errc, "invalid result")
		require.Empty(t, ch)
	})
	t.Run("no runner by the deadline", func(t *testing.T) {
		specPath, _, _ := writeSpec(t, t.TempDir(), srv.URL+ResultPath("late"), time.Now().Add(200*time.Millisecond))
		_, errc := startReporter(t, specPath)
		err := <-errc
		require.ErrorContains(t, err, "no connection from the runner")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("proceed check in a detection", func(t *testing.T) {
		sock, errc := startReporter(t, specPath)
		h := dial(t, sock)
		ref := h.proceed(t.Context())
		require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
		require.Contains(t, ref.Reason, "not a remediation run")
		require.NoError(t, h.deliver(t.Context(), okResult(t, "pod-run")))
		require.NoError(t, <-errc)
	})
}

// TestRunInPodWaitsForReporter: the runner container may start first; it
// connects once the reporter listens.
func TestRunInPodWaitsForReporter(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	specPath, _, hash := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), expires)
	ch, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)
	sock := socketPath(t)
	res := okResult(t, "pod-run").Result
	done := make(chan error, 1)
	go func() {
		done <- RunInPod(t.Context(), specPath, sock, runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			return res, nil
		}), noApply(t))
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, (&Reporter{}).Report(t.Context(), specPath, sock))
	require.NoError(t, <-done)
	require.Equal(t, "pod-run", (<-ch).Result.RunID)
}

// TestRunInPodHardening: the connection is made before the run starts,
// the runner's process is non-dumpable (same-user processes cannot ptrace
// it or open its descriptors through /proc), and the connection is not
// inherited by the processes it starts (Terraform, providers).
func TestRunInPodHardening(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	specPath, _, hash := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), expires)
	_, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)
	var childFDs string
	var wasDumpable bool
	var connected bool
	var parentSockets int
	sock := socketPath(t)
	p := runPodAt(t, specPath, sock, runnerFunc(func(ctx context.Context, _ terraform.Request) (runner.Result, error) {
		// The run starts only once the runner's connection is made (first
		// in the listener's queue): the reporter takes it and closes its
		// socket, and nothing the run starts can connect.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(sock); os.IsNotExist(err) {
				connected = true
				break
			}
		}
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			c.Close()
			connected = false
		}
		var err error
		wasDumpable, err = dumpable()
		require.NoError(t, err)
		// This process holds the connection (and the test servers'
		// sockets)...
		parentSockets = 0
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.HasPrefix(l, "socket:") {
				parentSockets++
			}
		}
		// ...a child, as Terraform is: which descriptors does it hold?
		out, err := exec.CommandContext(ctx, "sh", "-c", `for f in /proc/$$/fd/*; do echo "$f $(readlink "$f")"; done; true`).CombinedOutput()
		require.NoError(t, err, "%s", out)
		childFDs = string(out)
		return okResult(t, "pod-run").Result, nil
	}), noApply(t))
	require.NoError(t, p.runnerErr)
	require.NoError(t, p.reporterErr)
	require.True(t, connected, "the reporter still listens while the run runs")
	require.False(t, wasDumpable, "the runner's process is dumpable while it runs")
	require.NotZero(t, parentSockets)
	require.NotEmpty(t, childFDs)
	require.NotContains(t, childFDs, "socket:", "a child inherited a socket:\n%s", childFDs)
	t.Logf("a child's descriptors:\n%s", childFDs)
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	res := okResult(t, "r")
	require.NoError(t, writeFrame(&buf, frame{Kind: frameResult, Result: &res}))
	require.NoError(t, writeFrame(&buf, frame{Kind: frameAnswer, Refusal: &engine.Refusal{Code: engine.CodePaused, Reason: "paused"}}))
	f, err := readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, frameResult, f.Kind)
	require.Equal(t, res, *f.Result)
	f, err = readFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, engine.CodePaused, f.Refusal.Code)

	// A frame larger than the limit is refused before it is read.
	_, err = readFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}))
	require.ErrorContains(t, err, "more than")
	_, err = readFrame(bytes.NewReader([]byte{0, 0, 0, 9, '{'}))
	require.ErrorContains(t, err, "unexpected EOF")
	big := Result{Version: Version, RunID: "r", Error: &Error{Phase: "plan", Reason: strings.Repeat("x", maxFrameBytes)}}
	require.ErrorContains(t, writeFrame(&buf, frame{Kind: frameResult, Result: &big}), "more than")
}
