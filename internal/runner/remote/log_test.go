package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// TestLineQueue: lines in order, a full queue drops lines and says how
// many once there is room, and take numbers the lines it hands out.
func TestLineQueue(t *testing.T) {
	q := newLineQueue("the next hop was slow")
	q.max = 20
	_, _ = q.Write([]byte("== init ==\n"))
	_, _ = q.Write([]byte("whole"))
	_, _ = q.Write(nil)
	batch, seq, last := q.take()
	require.Equal(t, []string{"== init ==", "whole"}, batch)
	require.Zero(t, seq)
	require.False(t, last)

	q.add([]string{"0123456789", "0123456789", "lost", "lost"}) // 20 bytes fit
	batch, seq, _ = q.take()
	require.Equal(t, []string{"0123456789", "0123456789"}, batch)
	require.Equal(t, int64(2), seq)
	q.max = 1 << 10
	q.add([]string{"after"})
	q.close()
	q.add([]string{"after close"})
	batch, seq, last = q.take()
	require.Equal(t, []string{droppedMarker(2, "the next hop was slow"), "after"}, batch)
	require.Equal(t, int64(4), seq)
	require.True(t, last)
	require.Equal(t, "… 2 lines of the run's log dropped: the next hop was slow …", batch[0])
}

// TestLineQueueBatches: a batch holds at most maxLogBatchBytes of lines,
// and a line longer than maxLogLine is cut.
func TestLineQueueBatches(t *testing.T) {
	q := newLineQueue("slow")
	long := strings.Repeat("x", maxLogLine+10)
	q.add([]string{long, long, long})
	batch, _, _ := q.take()
	require.Equal(t, []int{maxLogLine, maxLogLine}, lineLengths(batch), "two cut lines fill a 128 KiB batch")
	batch, seq, _ := q.take()
	require.Equal(t, []int{maxLogLine}, lineLengths(batch))
	require.Equal(t, int64(2), seq)
}

// lineLengths are the lengths of lines (a failure does not print 64 KiB).
func lineLengths(lines []string) []int {
	out := make([]int, len(lines))
	for i, s := range lines {
		out[i] = len(s)
	}
	return out
}

// logRecorder is a run's live log as the daemon side sees it.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := strings.CutSuffix(string(p), "\n")
	if !ok || strings.Contains(s, "\n") {
		s = "NOT ONE WHOLE LINE: " + string(p)
	}
	l.lines = append(l.lines, s)
	return len(p), nil
}

func (l *logRecorder) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func writeLogSpec(t *testing.T, base string, expires time.Time) (specPath, token string, hash [32]byte) {
	dir := t.TempDir()
	specPath, token, hash = writeSpec(t, dir, base+ResultPath("pod-run"), expires)
	s, err := LoadSpec(specPath)
	require.NoError(t, err)
	s.LogURL = base + LogPath("pod-run")
	b, err := s.Encode()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(specPath, b, 0o600))
	return specPath, token, hash
}

// TestRunInPodStreamsLog: what the runner container's local runner writes
// to its log reaches the daemon's live log while the run goes on, in
// order, redacted of the run's token (the reporter's) and of the daemon's
// secrets (AttachLog's); every line is there before the result.
func TestRunInPodStreamsLog(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	expires := time.Now().Add(time.Hour)
	specPath, token, hash := writeLogSpec(t, srv.URL, expires)
	ch, err := r.Expect("pod-run", hash, expires)
	require.NoError(t, err)
	defer r.Forget("pod-run")
	var live logRecorder
	r.AttachLog("pod-run", &live, []string{"daemon-secret-42"})

	p := runPod(t, specPath, runnerFunc(func(ctx context.Context, req terraform.Request) (runner.Result, error) {
		fmt.Fprintf(req.Log, "== init ==\n")
		// The daemon has the line while the run still goes on.
		require.Eventually(t, func() bool { return len(live.get()) == 1 }, 5*time.Second, 5*time.Millisecond)
		fmt.Fprintf(req.Log, "leaked %s and daemon-secret-42\n", token)
		for i := range 500 {
			fmt.Fprintf(req.Log, "line %d\n", i)
		}
		fmt.Fprintf(req.Log, "== changes ==\nno newline at the end")
		return okResult(t, "pod-run").Result, nil
	}), noApply(t))
	require.NoError(t, p.runnerErr)
	require.NoError(t, p.reporterErr)
	d := <-ch
	require.NotNil(t, d.Result.Result.Plan)
	got := live.get()
	require.Len(t, got, 504)
	require.Equal(t, "== init ==", got[0])
	require.Equal(t, "leaked [REDACTED] and [REDACTED]", got[1])
	for i := range 500 {
		require.Equal(t, fmt.Sprintf("line %d", i), got[2+i])
	}
	require.Equal(t, []string{"== changes ==", "no newline at the end"}, got[502:])
	require.NotContains(t, strings.Join(got, "\n")+p.logs, token)
}

// TestReporterLogFailureKeepsResult: a daemon that refuses the log, or
// never answers it, still gets the result.
func TestReporterLogFailureKeepsResult(t *testing.T) {
	for name, logHandler := range map[string]http.HandlerFunc{
		"refused": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no", http.StatusBadRequest)
		},
		"unavailable": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "later", http.StatusServiceUnavailable)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReceiver(ReceiverOptions{})
			var posts atomic.Int32
			mux := http.NewServeMux()
			mux.Handle(Route, r)
			mux.HandleFunc(LogRoute, func(w http.ResponseWriter, req *http.Request) {
				posts.Add(1)
				logHandler(w, req)
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			expires := time.Now().Add(time.Hour)
			specPath, _, hash := writeLogSpec(t, srv.URL, expires)
			ch, err := r.Expect("pod-run", hash, expires)
			require.NoError(t, err)
			var logs lockedBuffer
			rp := &Reporter{
				Poster:       &Poster{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond},
				Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
				LogFlushWait: 300 * time.Millisecond,
			}
			sock := socketPath(t)
			rerr := make(chan error, 1)
			go func() { rerr <- rp.Report(t.Context(), specPath, sock) }()
			began := time.Now()
			err = RunInPod(t.Context(), specPath, sock, runnerFunc(func(_ context.Context, req terraform.Request) (runner.Result, error) {
				fmt.Fprintf(req.Log, "== plan ==\n")
				return okResult(t, "pod-run").Result, nil
			}), noApply(t))
			require.NoError(t, err)
			require.NoError(t, <-rerr)
			require.NotNil(t, (<-ch).Result.Result.Plan, "the result is delivered")
			require.Less(t, time.Since(began), 5*time.Second)
			require.Positive(t, posts.Load())
			require.Contains(t, logs.String(), "the run's log")
		})
	}
}

// TestLogHandler: the daemon's end. Posts are authenticated like results;
// a retried chunk is taken once, a gap is said, lines before AttachLog
// wait for it (bounded), and the log closes with the result.
func TestLogHandler(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	tok, hash := NewToken()
	expires := time.Now().Add(time.Hour)
	_, err := r.Expect("run-1", hash, expires)
	require.NoError(t, err)
	post := func(token string, c LogChunk) int {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		code, _ := send(t, srv.URL+LogPath("run-1"), delivery{token: token, body: b})
		return code
	}
	require.Equal(t, http.StatusUnauthorized, post("", LogChunk{Lines: []string{"x"}}))
	other, _ := NewToken()
	require.Equal(t, http.StatusForbidden, post(other, LogChunk{Lines: []string{"forged"}}))

	// Before the run's log is attached (an adopted run), lines wait.
	require.Equal(t, http.StatusNoContent, post(tok, LogChunk{Seq: 0, Lines: []string{"a", "b"}}))
	var live logRecorder
	r.AttachLog("run-1", &live, []string{"s3cr3t-daemon"})
	require.Equal(t, []string{"a", "b"}, live.get())
	// A retry whose answer was lost: only the new line is taken.
	require.Equal(t, http.StatusNoContent, post(tok, LogChunk{Seq: 1, Lines: []string{"b", "c"}}))
	require.Equal(t, http.StatusNoContent, post(tok, LogChunk{Seq: 0, Lines: []string{"a"}}))
	// A gap: lines this daemon never got.
	require.Equal(t, http.StatusNoContent, post(tok, LogChunk{Seq: 10, Lines: []string{"k s3cr3t-daemon"}}))
	require.Equal(t, []string{"a", "b", "c",
		"… 7 lines of the run's log were not received here (sent to a previous daemon, or lost) …",
		"k [REDACTED]"}, live.get())
	require.Equal(t, http.StatusBadRequest, post(tok, LogChunk{Seq: -1}))

	// The result closes the log.
	require.NoError(t, Post(t.Context(), srv.URL+ResultPath("run-1"), tok, okResult(t, "run-1")))
	require.Equal(t, http.StatusConflict, post(tok, LogChunk{Seq: 11, Lines: []string{"late"}}))
	require.Len(t, live.get(), 5)

	// Forgotten: detached and refused.
	tok2, hash2 := NewToken()
	_, err = r.Expect("run-2", hash2, expires)
	require.NoError(t, err)
	var live2 logRecorder
	r.AttachLog("run-2", &live2, nil)
	r.Forget("run-2")
	code, _ := send(t, srv.URL+LogPath("run-2"), delivery{token: tok2, body: []byte(`{"seq":0,"lines":["after forget"]}`)})
	require.Equal(t, http.StatusGone, code)
	require.Empty(t, live2.get())
}

// TestLogHandlerPendingBound: lines waiting for AttachLog are bounded, the
// dropped ones counted.
func TestLogHandlerPendingBound(t *testing.T) {
	s := &logSink{}
	line := strings.Repeat("y", 1000)
	n := maxPendingLogBytes/1000 + 5
	lines := make([]string, n)
	for i := range lines {
		lines[i] = line
	}
	s.take(LogChunk{Lines: lines})
	var live logRecorder
	r := NewReceiver(ReceiverOptions{})
	_, hash := NewToken()
	_, err := r.Expect("run", hash, time.Now().Add(time.Hour))
	require.NoError(t, err)
	r.runs["run"].sink = s
	r.AttachLog("run", &live, nil)
	got := live.get()
	require.Len(t, got, maxPendingLogBytes/1000+1)
	require.Equal(t, droppedMarker(5, "they came before the daemon awaited the run"), got[len(got)-1])
}
