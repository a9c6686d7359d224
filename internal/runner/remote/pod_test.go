package remote

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// noApply is the ApplyFunc of a detection spec's test: never called.
func noApply(t *testing.T) ApplyFunc {
	return func(context.Context, terraform.Request, *Remediation, func(context.Context) *engine.Refusal) (engine.Outcome, error) {
		t.Fatal("a detection spec was applied")
		return engine.Outcome{}, nil
	}
}

// runnerFunc adapts a function to runner.Runner.
type runnerFunc func(context.Context, terraform.Request) (runner.Result, error)

func (f runnerFunc) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	return f(ctx, req)
}

func writeSpec(t *testing.T, dir, callback string, expires time.Time) (specPath, token string, hash [32]byte) {
	token, hash = NewToken()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	s := Spec{
		Version: Version, RunID: "pod-run", Workspace: "ws",
		Source:      Source{Path: "/src"},
		Env:         map[string]string{"A": "1"},
		Timeout:     Duration(time.Minute),
		WorkDir:     "/work",
		CallbackURL: callback, TokenFile: tokenFile, ExpiresAt: expires,
	}
	b, err := s.Encode()
	require.NoError(t, err)
	specPath = filepath.Join(dir, "spec.json")
	require.NoError(t, os.WriteFile(specPath, b, 0o600))
	return specPath, token, hash
}

// socketPath is a fresh handoff socket path, short enough for a unix
// socket whatever the test's name.
func socketPath(t *testing.T) string {
	dir, err := os.MkdirTemp("", "dw-handoff-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "reporter.sock")
}

// pod runs a run pod's two containers in-process: the reporter
// (Reporter.Report) and the runner (RunInPod), sharing the spec and the
// handoff socket, and returns what each returned.
type podRun struct {
	runnerErr, reporterErr error
	logs                   string
}

func runPod(t *testing.T, specPath string, local runner.Runner, apply ApplyFunc) podRun {
	t.Helper()
	return runPodAt(t, specPath, socketPath(t), local, apply)
}

func runPodAt(t *testing.T, specPath, sock string, local runner.Runner, apply ApplyFunc) podRun {
	t.Helper()
	var logs lockedBuffer
	rp := &Reporter{
		Poster:  &Poster{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		Checker: fastChecker(),
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
	}
	rerr := make(chan error, 1)
	go func() { rerr <- rp.Report(t.Context(), specPath, sock) }()
	var out podRun
	out.runnerErr = RunInPod(t.Context(), specPath, sock, local, apply)
	out.reporterErr = <-rerr
	out.logs = logs.String()
	return out
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunInPod(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)

	t.Run("delivers a result through the reporter", func(t *testing.T) {
		specPath, _, hash := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), expires)
		ch, err := r.Expect("pod-run", hash, expires)
		require.NoError(t, err)
		defer r.Forget("pod-run")
		want := okResult(t, "pod-run")
		var got terraform.Request
		p := runPod(t, specPath, runnerFunc(func(_ context.Context, req terraform.Request) (runner.Result, error) {
			got = req
			require.NotNil(t, req.Log, "the run's log goes to the reporter")
			got.Log = nil
			return want.Result, nil
		}), noApply(t))
		require.NoError(t, p.runnerErr)
		require.NoError(t, p.reporterErr)
		require.Equal(t, terraform.Request{RunID: "pod-run", Workspace: "ws", Source: terraform.Source{Path: "/src"},
			Env: map[string]string{"A": "1"}, Timeout: time.Minute, WorkDir: "/work"}, got)
		if d := cmp.Diff(Delivery{Result: want}, <-ch); d != "" {
			t.Fatalf("delivered (-want +got):\n%s", d)
		}
		require.Contains(t, p.logs, "runner connected; no other connection is accepted")
	})
	t.Run("delivers a failure", func(t *testing.T) {
		r2 := NewReceiver(ReceiverOptions{})
		srv2 := receiverServer(t, r2)
		specPath, _, hash := writeSpec(t, t.TempDir(), srv2.URL+ResultPath("pod-run"), expires)
		ch, err := r2.Expect("pod-run", hash, expires)
		require.NoError(t, err)
		p := runPod(t, specPath, runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			return runner.Result{Tool: "terraform 1.11.4"}, &terraform.Error{Phase: "init", Reason: "Error: Failed to query available provider packages"}
		}), noApply(t))
		require.NoError(t, p.runnerErr, "a failed run that was handed over is not a pod failure")
		require.NoError(t, p.reporterErr, "nor, delivered, for the reporter")
		res, err := (<-ch).Result.Unpack()
		require.EqualError(t, err, "init: Error: Failed to query available provider packages")
		require.Equal(t, "terraform 1.11.4", res.Tool)
	})
	t.Run("refused delivery fails the reporter", func(t *testing.T) {
		r3 := NewReceiver(ReceiverOptions{})
		srv3 := receiverServer(t, r3)
		soon := time.Now().Add(time.Second)
		specPath, token, _ := writeSpec(t, t.TempDir(), srv3.URL+ResultPath("pod-run"), soon)
		other, _ := NewToken()
		_, err := r3.Expect("pod-run", HashToken(other), soon)
		require.NoError(t, err)
		p := runPod(t, specPath, runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			return okResult(t, "pod-run").Result, nil
		}), noApply(t))
		require.NoError(t, p.runnerErr, "the runner handed its result over")
		require.ErrorContains(t, p.reporterErr, "403")
		require.NotContains(t, p.reporterErr.Error(), token)
	})
	t.Run("409 on the first post fails the reporter as suspicious", func(t *testing.T) {
		r4 := NewReceiver(ReceiverOptions{})
		srv4 := receiverServer(t, r4)
		specPath, token, hash := writeSpec(t, t.TempDir(), srv4.URL+ResultPath("pod-run"), expires)
		ch, err := r4.Expect("pod-run", hash, expires)
		require.NoError(t, err)
		// A module read the token (an older pod shape) and posted a
		// "clean" plan before the run ended.
		forged := ResultOf("pod-run", runner.Result{Plan: &planparse.Plan{FormatVersion: "1.2"}, ExitCode: 0}, nil)
		require.NoError(t, Post(t.Context(), srv4.URL+ResultPath("pod-run"), token, forged))
		p := runPod(t, specPath, runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			return okResult(t, "pod-run").Result, nil
		}), noApply(t))
		require.NoError(t, p.runnerErr)
		var ce *ConflictError
		require.ErrorAs(t, p.reporterErr, &ce, "the reporter exits non-zero: the pod fails")
		require.Equal(t, 1, ce.Attempt)
		require.Contains(t, p.logs, "suspicious")
		require.Contains(t, p.logs, "first_post=true")
		require.NotContains(t, p.logs+p.reporterErr.Error(), token)
		// And the daemon was told: its awaiter drops the forged result.
		require.Equal(t, forged, (<-ch).Result)
		require.Equal(t, ErrConflictingResults, (<-ch).Conflict)
	})
	t.Run("bad spec", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "spec.json")
		require.NoError(t, os.WriteFile(p, []byte(`{"version":1}`), 0o600))
		err := RunInPod(t.Context(), p, socketPath(t), runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			t.Fatal("ran with an invalid spec")
			return runner.Result{}, nil
		}), noApply(t))
		require.ErrorContains(t, err, "invalid spec")
		err = (&Reporter{}).Report(t.Context(), p, socketPath(t))
		require.ErrorContains(t, err, "invalid spec")
	})
	t.Run("no reporter", func(t *testing.T) {
		specPath, _, _ := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), time.Now().Add(300*time.Millisecond))
		err := RunInPod(t.Context(), specPath, socketPath(t), runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			t.Fatal("ran without a reporter to hand the result to")
			return runner.Result{}, nil
		}), noApply(t))
		require.ErrorContains(t, err, "connect to the reporter")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
