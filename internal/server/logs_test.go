package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/store"
)

var errNotRunning = fmt.Errorf("registry: run is not running: %w", ErrNotRunning)

// memLogs is a store.LogStore in memory.
type memLogs struct {
	mu   sync.Mutex
	logs map[string][]byte
}

func (m *memLogs) SaveRunLog(_ context.Context, id string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logs[id] = b
	return nil
}

func (m *memLogs) RunLog(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.logs[id]
	if !ok {
		return nil, store.ErrNotFound
	}
	return b, nil
}

type logHarness struct {
	*harness
	mu   sync.Mutex
	live map[string]*runlog.Log
	logs *memLogs
}

func newLogHarness(t *testing.T) (*logHarness, Options) {
	h := &logHarness{harness: newHarness(t), live: map[string]*runlog.Log{}, logs: &memLogs{logs: map[string][]byte{}}}
	o := h.options()
	h.setLiveLog(func(id string) *runlog.Log {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.live[id]
	})
	o.Logs = h.logs
	h.setCancel(func(id string) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.live[id]; ok {
			r, _ := h.store.Run(context.Background(), id)
			return r.Status == store.RunQueued, nil
		}
		if _, err := h.store.Run(context.Background(), id); err == nil {
			return false, fmt.Errorf("cancel %s: %w", id, errNotRunning)
		}
		return false, fmt.Errorf("cancel %s: %w", id, store.ErrNotFound)
	})
	o.Config.TokenFile = writeToken(t, testToken)
	return h, o
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct{ event, data string }

// readEvents parses SSE events from r onto a channel, closed at EOF.
func readEvents(resp *http.Response) <-chan sseEvent {
	ch := make(chan sseEvent, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "stream ended early")
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return sseEvent{}
}

func TestLiveLogStreamsBeforeRunEnds(t *testing.T) {
	h, o := newLogHarness(t)
	h.store.addRun(store.Run{ID: "live-1", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, Status: store.RunRunning})
	l := runlog.New(1<<20, func(s string) string { return strings.ReplaceAll(s, "CANARY", "[REDACTED]") })
	h.live["live-1"] = l
	l.Printf("== init ==")
	l.Printf("Initializing CANARY")
	ts := serve(t, o)

	// A real client connects mid-run: it gets the replay, then live lines
	// while the run is still going.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/api/v1/runs/live-1/logs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	evs := readEvents(resp)
	require.Equal(t, sseEvent{data: "== init =="}, next(t, evs))
	require.Equal(t, sseEvent{data: "Initializing [REDACTED]"}, next(t, evs))

	_, _ = l.Write([]byte("== plan ==\nPlanning"))
	require.Equal(t, sseEvent{data: "== plan =="}, next(t, evs))
	_, _ = l.Write([]byte(" CANARY done\n"))
	require.Equal(t, sseEvent{data: "Planning [REDACTED] done"}, next(t, evs))

	// The page of the live run refreshes every 2 s and shows the log so far.
	code, _, body := do(t, http.MethodGet, ts.URL+"/runs/live-1", basicAuth(testToken))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<meta http-equiv="refresh" content="2">`)
	require.Contains(t, body, "Planning [REDACTED] done")
	require.NotContains(t, body, "CANARY")

	// The daemon saves the log, closes it, then drops it from LiveLog.
	require.NoError(t, h.logs.SaveRunLog(t.Context(), "live-1", l.Bytes()))
	l.Close("drift")
	require.Equal(t, sseEvent{event: "end", data: `{"status":"drift"}`}, next(t, evs))
	_, ok := <-evs
	require.False(t, ok, "stream closes after end")
}

func TestFinishedRunLog(t *testing.T) {
	h, o := newLogHarness(t)
	h.store.addRun(store.Run{ID: "done-1", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, FinishedAt: testNow.Add(time.Minute), Status: "errored", Error: "plan: Error: Unsupported argument"})
	h.store.addRun(store.Run{ID: "nolog", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, FinishedAt: testNow.Add(time.Minute), Status: "clean"})
	h.logs.logs["done-1"] = []byte("== plan ==\nError: Unsupported argument <b>\n")
	ts := serve(t, o)

	auth := bearerAuth(testToken)
	code, hdr, body := do(t, http.MethodGet, ts.URL+"/api/v1/runs/done-1/logs", auth)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "text/plain; charset=utf-8", hdr.Get("Content-Type"))
	require.Equal(t, "== plan ==\nError: Unsupported argument <b>\n", body)

	code, hdr, body = do(t, http.MethodGet, ts.URL+"/api/v1/runs/done-1/logs", map[string]string{"Accept": "text/event-stream", "Authorization": auth["Authorization"]})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "text/event-stream; charset=utf-8", hdr.Get("Content-Type"))
	require.Equal(t, "data: == plan ==\n\ndata: Error: Unsupported argument <b>\n\nevent: end\ndata: {\"status\":\"errored\"}\n\n", body)

	code, _, body = do(t, http.MethodGet, ts.URL+"/api/v1/runs/nolog/logs", auth)
	require.Equal(t, http.StatusNotFound, code, body)
	code, _, body = do(t, http.MethodGet, ts.URL+"/api/v1/runs/unknown/logs", auth)
	require.Equal(t, http.StatusNotFound, code)
	require.JSONEq(t, `{"error": "unknown run"}`, body)

	// The run page: escaped log in a <pre>, no refresh.
	auth = basicAuth(testToken)
	code, _, body = do(t, http.MethodGet, ts.URL+"/runs/done-1", auth)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<pre class="log">== plan ==
Error: Unsupported argument &lt;b&gt;
</pre>`)
	require.NotContains(t, body, `http-equiv="refresh"`)
	code, _, body = do(t, http.MethodGet, ts.URL+"/runs/nolog", auth)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No log is stored for this run.")
	code, _, _ = do(t, http.MethodGet, ts.URL+"/runs/unknown", auth)
	require.Equal(t, http.StatusNotFound, code)
}

func TestWorkspacePageLinksRuns(t *testing.T) {
	h, o := newLogHarness(t)
	h.store.addRun(store.Run{ID: "linked-run", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow.Add(time.Minute), FinishedAt: testNow.Add(2 * time.Minute), Status: "clean"})
	ts := serve(t, o)
	code, _, body := get(t, ts.URL+"/workspaces/prod-network")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `href="/runs/linked-run"`)
}

func TestCancel(t *testing.T) {
	h, o := newLogHarness(t)
	h.store.addRun(store.Run{ID: "live-1", Workspace: "prod-network", StartedAt: testNow, Status: store.RunRunning})
	h.store.addRun(store.Run{ID: "done-1", Workspace: "prod-network", StartedAt: testNow, FinishedAt: testNow, Status: "clean"})
	h.store.addRun(store.Run{ID: "queued-1", Workspace: "prod-network", StartedAt: testNow, Status: store.RunQueued})
	h.live["live-1"] = runlog.New(1024, nil)
	h.live["queued-1"] = runlog.New(1024, nil)
	ts := serve(t, o)
	auth := map[string]string{"Authorization": "Bearer " + testToken}

	code, _, body := do(t, http.MethodPost, ts.URL+"/api/v1/runs/live-1/cancel", nil)
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, hdr, body := do(t, http.MethodPost, ts.URL+"/api/v1/runs/live-1/cancel", auth)
	requireJSON(t, http.StatusAccepted, `{"run": "live-1", "status": "cancelling"}`, code, hdr, body)
	require.Equal(t, "/api/v1/runs/live-1", hdr.Get("Location"))
	code, hdr, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/queued-1/cancel", auth)
	requireJSON(t, http.StatusAccepted, `{"run": "queued-1", "status": "cancelled"}`, code, hdr, body)
	code, hdr, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/done-1/cancel", auth)
	requireJSON(t, http.StatusConflict, `{"error": "the run is not queued or running"}`, code, hdr, body)
	code, hdr, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/nope/cancel", auth)
	requireJSON(t, http.StatusNotFound, `{"error": "unknown run"}`, code, hdr, body)

	h.setCancel(func(string) (bool, error) {
		return false, fmt.Errorf("%w: a standby; the leader is a_1", ErrUnavailable)
	})
	ts = serve(t, o)
	code, hdr, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/live-1/cancel", auth)
	requireJSON(t, http.StatusServiceUnavailable, `{"error": "not scheduling: a standby; the leader is a_1"}`, code, hdr, body)

	h.setCancel(nil)
	ts = serve(t, o)
	code, _, _ = do(t, http.MethodPost, ts.URL+"/api/v1/runs/live-1/cancel", auth)
	require.Equal(t, http.StatusNotImplemented, code)
}

// The daemon's wiring for runs outside the scheduler's queue:
// runlog.Registry backs LiveLog and Cancel, its ErrNotRunning mapped to
// the server's as the daemon's Control does.
func TestCancelWithRegistry(t *testing.T) {
	h, o := newLogHarness(t)
	reg := runlog.NewRegistry()
	h.setLiveLog(reg.Live)
	h.setCancel(func(id string) (bool, error) {
		err := reg.Cancel(id)
		if errors.Is(err, runlog.ErrNotRunning) {
			return false, fmt.Errorf("%w: %w", ErrNotRunning, err)
		}
		return false, err
	})
	h.store.addRun(store.Run{ID: "live-1", Workspace: "prod-network", StartedAt: testNow, Status: store.RunRunning})
	h.store.addRun(store.Run{ID: "done-1", Workspace: "prod-network", StartedAt: testNow, FinishedAt: testNow, Status: "clean"})
	ctx, cancel := context.WithCancelCause(t.Context())
	reg.Add("live-1", runlog.New(1024, nil), cancel)
	reg.Add("queued-1", runlog.New(1024, nil), nil) // queued: the scheduler cancels it, not the registry
	ts := serve(t, o)
	auth := map[string]string{"Authorization": "Bearer " + testToken}

	code, _, body := do(t, http.MethodPost, ts.URL+"/api/v1/runs/live-1/cancel", auth)
	require.Equal(t, http.StatusAccepted, code, body)
	require.ErrorIs(t, context.Cause(ctx), runlog.ErrCancelled)
	code, _, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/queued-1/cancel", auth)
	require.Equal(t, http.StatusNotFound, code, "not recorded and not cancellable here: %s", body)
	code, _, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/done-1/cancel", auth)
	require.Equal(t, http.StatusConflict, code, body)
	code, _, body = do(t, http.MethodPost, ts.URL+"/api/v1/runs/nope/cancel", auth)
	require.Equal(t, http.StatusNotFound, code, body)
}
