package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// lockedBuffer is a bytes.Buffer safe for a reader polling it.
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

// logsControl is a server.Control for reading logs: one workspace, and the
// runs in flight in reg (nil: none, and no cancellation), wired as the
// daemon's Control wires its run registry.
type logsControl struct{ reg *runlog.Registry }

func (logsControl) Workspaces() []server.WorkspaceInfo { return []server.WorkspaceInfo{{Name: "net"}} }
func (logsControl) Trigger(string) (string, error)     { return "", nil }
func (logsControl) Ready() error                       { return nil }

func (c logsControl) Cancel(id string) (bool, error) {
	if c.reg == nil {
		return false, errors.ErrUnsupported
	}
	err := c.reg.Cancel(id)
	if errors.Is(err, runlog.ErrNotRunning) {
		return false, fmt.Errorf("%w: %w", server.ErrNotRunning, err)
	}
	return false, err
}

func (c logsControl) LiveLog(id string) *runlog.Log {
	if c.reg == nil {
		return nil
	}
	return c.reg.Live(id)
}

func (logsControl) Notifiers(context.Context) ([]server.NotifierStatus, error) { return nil, nil }

// `driftwatch logs --follow` against the real server, a sqlite store and
// a runlog.Registry wired as the daemon will: lines arrive while the run
// is in flight, the verdict at the end; afterwards the stored log is
// printed. It reads with the read token.
func TestLogsFollowRealServer(t *testing.T) {
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := runlog.NewRegistry()
	readToken := filepath.Join(t.TempDir(), "read-token")
	require.NoError(t, os.WriteFile(readToken, []byte("read-tok-CANARY\n"), 0o600))
	srv, err := server.New(server.Options{
		Config:   config.Server{ReadTokenFile: readToken},
		Store:    st,
		Control:  logsControl{reg},
		Gatherer: prometheus.NewRegistry(),
		Logger:   logger,
		Logs:     st,
	})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	run := store.Run{ID: "run-1", Workspace: "net", Trigger: "manual", StartedAt: time.Now()}
	require.NoError(t, st.StartRun(ctx, run))
	l := runlog.New(1<<20, func(s string) string { return strings.ReplaceAll(s, "CANARY", "[REDACTED]") })
	reg.Add(run.ID, l, func(error) {})
	l.Printf("== init ==")

	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- logsCmd([]string{run.ID, "--follow", "--server", ts.URL, "--token-file", readToken}, &out, &errb)
	}()
	require.Eventually(t, func() bool { return out.String() == "== init ==\n" }, 5*time.Second, 10*time.Millisecond)
	l.Printf("== plan ==")
	l.Printf("value CANARY")
	require.Eventually(t, func() bool { return strings.HasSuffix(out.String(), "value [REDACTED]\n") }, 5*time.Second, 10*time.Millisecond)
	select {
	case <-done:
		t.Fatal("logs --follow returned before the run ended")
	default:
	}

	// The daemon's end of a run: finish, save, close, unregister.
	run.Status, run.FinishedAt = "clean", time.Now()
	_, _, err = st.FinishRun(ctx, run)
	require.NoError(t, err)
	require.NoError(t, st.SaveRunLog(ctx, run.ID, l.Bytes()))
	l.Close("clean")
	reg.Remove(run.ID)
	require.Equal(t, 0, <-done, errb.String())
	require.Equal(t, "== init ==\n== plan ==\nvalue [REDACTED]\n", out.String())
	require.Equal(t, "run run-1: clean\n", errb.String())

	var out2, errb2 bytes.Buffer
	require.Equal(t, 0, logsCmd([]string{run.ID, "--server", ts.URL, "--token-file", readToken}, &out2, &errb2), errb2.String())
	require.Equal(t, "== init ==\n== plan ==\nvalue [REDACTED]\n", out2.String())
	require.NotContains(t, out.String()+errb.String()+out2.String()+errb2.String(), "CANARY")
}

// Without the token, or with a wrong one, the real server refuses the log
// and the command says what to pass; a daemon without any token says how
// to configure it. No output shows a token.
func TestLogsRefusedRealServer(t *testing.T) {
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	run := store.Run{ID: "run-1", Workspace: "net", Trigger: "manual", StartedAt: time.Now()}
	require.NoError(t, st.StartRun(ctx, run))
	run.Status, run.FinishedAt = "clean", time.Now()
	_, _, err = st.FinishRun(ctx, run)
	require.NoError(t, err)
	require.NoError(t, st.SaveRunLog(ctx, run.ID, []byte("== plan ==\n")))
	dir := t.TempDir()
	apiToken, wrong := filepath.Join(dir, "api-token"), filepath.Join(dir, "wrong")
	require.NoError(t, os.WriteFile(apiToken, []byte("api-tok-CANARY"), 0o600))
	require.NoError(t, os.WriteFile(wrong, []byte("wrong-tok-CANARY"), 0o600))
	serve := func(tokenFile string) string {
		srv, err := server.New(server.Options{
			Config:   config.Server{TokenFile: tokenFile},
			Store:    st,
			Control:  logsControl{},
			Gatherer: prometheus.NewRegistry(),
			Logger:   logger,
			Logs:     st,
		})
		require.NoError(t, err)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		return ts.URL
	}
	withToken, noToken := serve(apiToken), serve("")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no token", []string{"--server", withToken}, "driftwatch: logs run-1: 401 Unauthorized: run logs and run pages need a read credential: " +
			"the API token or the read token (server.read_token_file), as a bearer token or as the password of HTTP Basic auth (any user name): " +
			"the daemon at " + withToken + " needs a read credential for logs: pass --token-file FILE holding its API token (server.token_file) or its read token (server.read_token_file)\n"},
		{"no token, follow", []string{"-f", "--server", withToken}, "driftwatch: logs run-1: 401 Unauthorized: "},
		{"wrong token", []string{"--server", withToken, "--token-file", wrong}, "driftwatch: logs run-1: 401 Unauthorized: invalid read credential: it is neither the API token nor the read token: " +
			"the daemon at " + withToken + " rejected the token in " + wrong + " (it must hold the daemon's server.token_file or server.read_token_file token)\n"},
		{"no token configured", []string{"--server", noToken, "--token-file", apiToken}, "driftwatch: logs run-1: 403 Forbidden: run logs and run pages need a read credential, and none is configured: " +
			"set server.read_token_file (or server.token_file), or server.open_reads: true to open them (the daemon at " + noToken + " serves logs to nobody until it is configured so)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, 1, logsCmd(append([]string{"run-1"}, c.args...), &out, &errb))
			require.Empty(t, out.String())
			if strings.HasSuffix(c.want, "\n") {
				require.Equal(t, c.want, errb.String())
			} else {
				require.Contains(t, errb.String(), c.want)
			}
			require.NotContains(t, errb.String(), "CANARY")
		})
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, logsCmd([]string{"run-1", "--server", withToken, "--token-file", apiToken}, &out, &errb), errb.String())
	require.Equal(t, "== plan ==\n", out.String())
}
