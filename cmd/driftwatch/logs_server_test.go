package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

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

// `driftwatch logs --follow` against the real server, a sqlite store and
// a runlog.Registry wired as the daemon will: lines arrive while the run
// is in flight, the verdict at the end; afterwards the stored log is
// printed.
func TestLogsFollowRealServer(t *testing.T) {
	ctx := t.Context()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := runlog.NewRegistry()
	srv, err := server.New(server.Options{
		Store:      st,
		Workspaces: func() []server.WorkspaceInfo { return []server.WorkspaceInfo{{Name: "net"}} },
		Trigger:    func(string) (string, error) { return "", nil },
		Ready:      func() error { return nil },
		Gatherer:   prometheus.NewRegistry(),
		Logger:     logger,
		LiveLog:    reg.Live,
		Logs:       st,
		Cancel:     func(id string) (bool, error) { return false, reg.Cancel(id) }, NotRunningErr: runlog.ErrNotRunning,
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
	go func() { done <- logsCmd([]string{run.ID, "--follow", "--server", ts.URL}, &out, &errb) }()
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
	require.Equal(t, 0, logsCmd([]string{run.ID, "--server", ts.URL}, &out2, &errb2), errb2.String())
	require.Equal(t, "== init ==\n== plan ==\nvalue [REDACTED]\n", out2.String())
}
