package remote

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// flaky answers with the given statuses first, then hands over to next.
type flaky struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header
	next     http.Handler
	calls    int
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	var code int
	if len(f.statuses) > 0 {
		code, f.statuses = f.statuses[0], f.statuses[1:]
	}
	f.mu.Unlock()
	if code != 0 {
		for k, v := range f.header {
			w.Header()[k] = v
		}
		http.Error(w, http.StatusText(code), code)
		return
	}
	f.next.ServeHTTP(w, r)
}

func TestPost(t *testing.T) {
	fast := &Poster{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

	t.Run("retries transient failures", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		tok, hash := NewToken()
		ch, err := r.Expect("r1", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.Handle(Route, r)
		f := &flaky{statuses: []int{503, 429, 502}, header: http.Header{"Retry-After": {"0"}}, next: mux}
		srv := httptest.NewServer(f)
		defer srv.Close()
		require.NoError(t, fast.Post(t.Context(), srv.URL+ResultPath("r1"), tok, okResult(t, "r1")))
		require.Equal(t, 4, f.calls)
		require.Equal(t, "r1", (<-ch).Result.RunID)
		// The response to the accepted attempt was "lost": a retry of the
		// same result is accepted again.
		require.NoError(t, fast.Post(t.Context(), srv.URL+ResultPath("r1"), tok, okResult(t, "r1")))
		require.Empty(t, ch, "delivered once")
	})
	t.Run("waits for a restarting daemon", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		srv := receiverServer(t, r)
		tok, hash := NewToken()
		res := okResult(t, "late")
		done := make(chan error, 1)
		go func() { done <- fast.Post(t.Context(), srv.URL+ResultPath("late"), tok, res) }()
		time.Sleep(50 * time.Millisecond) // a few 403s: not armed yet
		ch, err := r.Expect("late", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.NoError(t, <-done)
		require.Equal(t, "late", (<-ch).Result.RunID)
	})
	t.Run("a wrong token is tried until the deadline", func(t *testing.T) {
		// The Receiver does not say whether the run is unknown (not yet
		// re-armed) or the token wrong: 403 is tried again.
		r := NewReceiver(ReceiverOptions{})
		srv := receiverServer(t, r)
		_, hash := NewToken()
		ch, err := r.Expect("r2", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		forged, _ := NewToken()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err = fast.Post(ctx, srv.URL+ResultPath("r2"), forged, okResult(t, "r2"))
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, http.StatusForbidden, se.Code)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotContains(t, err.Error(), forged)
		require.Empty(t, ch)
	})
	t.Run("409 on the first post is a conflict, not a success", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		f := &flaky{next: http.HandlerFunc(r.ServeHTTP)}
		mux := http.NewServeMux()
		mux.Handle(Route, f)
		srv := httptest.NewServer(mux)
		defer srv.Close()
		tok, hash := NewToken()
		ch, err := r.Expect("r4", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		// Someone with the token posts a "clean" result first.
		forged := ResultOf("r4", runner.Result{Plan: &planparse.Plan{FormatVersion: "1.2"}}, nil)
		require.NoError(t, fast.Post(t.Context(), srv.URL+ResultPath("r4"), tok, forged))
		calls := f.calls
		err = fast.Post(t.Context(), srv.URL+ResultPath("r4"), tok, okResult(t, "r4"))
		var ce *ConflictError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 1, ce.Attempt)
		require.Equal(t, calls+1, f.calls, "not retried")
		require.ErrorContains(t, err, "suspicious")
		require.ErrorContains(t, err, "possible forgery")
		require.NotContains(t, err.Error(), tok)
		require.Equal(t, forged, (<-ch).Result)
		require.Equal(t, ErrConflictingResults, (<-ch).Conflict)
	})
	t.Run("a malformed result is final", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		srv := receiverServer(t, r)
		tok, hash := NewToken()
		_, err := r.Expect("r5", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		err = fast.Post(t.Context(), srv.URL+ResultPath("r5"), tok, Result{Version: Version, RunID: "r5"})
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, http.StatusBadRequest, se.Code)
	})
	t.Run("gives up at the deadline", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err := fast.Post(ctx, srv.URL+ResultPath("r3"), "tok", okResult(t, "r3"))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "503")
	})
}
