package remote

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/remediation/engine"
)

// switchboard is a ProceedFunc whose answer the test sets, recording the
// runs asked about.
type switchboard struct {
	mu     sync.Mutex
	answer *engine.Refusal
	asked  []string
}

func (s *switchboard) proceed(_ context.Context, runID string) *engine.Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, runID)
	return s.answer
}

func (s *switchboard) set(r *engine.Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = r
}

func (s *switchboard) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// fastChecker fails within a second against any dead daemon.
func fastChecker() *Checker {
	return &Checker{Client: &http.Client{Timeout: 200 * time.Millisecond}, Attempts: 3, Backoff: 10 * time.Millisecond}
}

// TestProceedCheck: the daemon's side. A check is authenticated by the
// run's token like a result, answers what the daemon's ProceedFunc says,
// and consumes nothing: the token then delivers the result, once.
func TestProceedCheck(t *testing.T) {
	sw := &switchboard{}
	r := NewReceiver(ReceiverOptions{Proceed: sw.proceed})
	srv := receiverServer(t, r)
	tok, hash := NewToken()
	ch, err := r.Expect("apply-1", hash, time.Now().Add(time.Hour))
	require.NoError(t, err)
	url := srv.URL + ProceedPath("apply-1")
	get := func(token string) (int, string) { return send(t, url, delivery{method: http.MethodGet, token: token}) }
	decode := func(body string) ProceedAnswer {
		var a ProceedAnswer
		require.NoError(t, json.Unmarshal([]byte(body), &a))
		return a
	}

	code, _ := get("")
	require.Equal(t, http.StatusUnauthorized, code)
	forged, _ := NewToken()
	code, forgedMsg := get(forged)
	require.Equal(t, http.StatusForbidden, code)
	// An unknown run gets the same answer as a wrong token.
	code, msg := send(t, srv.URL+ProceedPath("other"), delivery{method: http.MethodGet, token: tok})
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, forgedMsg, msg)
	require.Empty(t, sw.calls(), "refused checks do not reach the daemon's answer")

	code, body := get(tok)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, ProceedAnswer{Proceed: true}, decode(body))

	paused := &engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"}
	sw.set(paused)
	code, body = get(tok)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, ProceedAnswer{Refusal: paused}, decode(body))
	require.Equal(t, []string{"apply-1", "apply-1"}, sw.calls())

	// The checks consumed nothing: the token delivers the outcome, once.
	res := OutcomeOf("apply-1", engine.Outcome{Result: engine.ResultRefused, Refusals: []engine.Refusal{*paused}}, nil)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	code, msg = send(t, srv.URL+ResultPath("apply-1"), delivery{token: tok, body: b})
	require.Equal(t, http.StatusNoContent, code, msg)
	require.Equal(t, res, (<-ch).Result)
	code, _ = send(t, srv.URL+ResultPath("apply-1"), delivery{token: tok, body: b})
	require.Equal(t, http.StatusNoContent, code, "an identical re-post is idempotent")
	require.Empty(t, ch, "still single use")
	// Once the result is in, there is nothing left to proceed with.
	code, _ = get(tok)
	require.Equal(t, http.StatusConflict, code)

	t.Run("no longer awaited", func(t *testing.T) {
		tok, hash := NewToken()
		_, err := r.Expect("apply-2", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		r.Forget("apply-2")
		code, _ := send(t, srv.URL+ProceedPath("apply-2"), delivery{method: http.MethodGet, token: tok})
		require.Equal(t, http.StatusGone, code)
	})
	t.Run("wrong method", func(t *testing.T) {
		code, _ := send(t, url, delivery{method: http.MethodPost, token: tok})
		require.Equal(t, http.StatusMethodNotAllowed, code)
	})
	t.Run("no ProceedFunc", func(t *testing.T) {
		r := NewReceiver(ReceiverOptions{})
		srv := receiverServer(t, r)
		tok, hash := NewToken()
		_, err := r.Expect("apply-3", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		code, _ := send(t, srv.URL+ProceedPath("apply-3"), delivery{method: http.MethodGet, token: tok})
		require.Equal(t, http.StatusNotImplemented, code)
		ref := fastChecker().Check(t.Context(), srv.URL+ProceedPath("apply-3"), tok)
		require.NotNil(t, ref, "fails closed")
		require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
	})
}

// TestChecker: the pod's side. It proceeds only on the daemon's "proceed",
// passes the daemon's refusal on, and fails closed on anything else.
func TestChecker(t *testing.T) {
	t.Run("real receiver", func(t *testing.T) {
		sw := &switchboard{}
		r := NewReceiver(ReceiverOptions{Proceed: sw.proceed})
		srv := receiverServer(t, r)
		tok, hash := NewToken()
		_, err := r.Expect("apply-1", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		url := srv.URL + ProceedPath("apply-1")
		require.Nil(t, fastChecker().Check(t.Context(), url, tok))
		paused := &engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"}
		sw.set(paused)
		require.Equal(t, paused, fastChecker().Check(t.Context(), url, tok))
		forged, _ := NewToken()
		ref := fastChecker().Check(t.Context(), url, forged)
		require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
		require.Contains(t, ref.Reason, "403 Forbidden: unknown run or invalid token")
		require.NotContains(t, ref.Reason, forged, "no token in the reason")
		require.Len(t, sw.calls(), 2, "a refused credential never reaches the daemon's answer")
	})

	for _, tc := range []struct {
		name     string
		handler  func(n int32, w http.ResponseWriter)
		attempts int32
		want     string // "" proceeds
	}{
		{"5xx every time", func(_ int32, w http.ResponseWriter) { http.Error(w, "db locked", http.StatusServiceUnavailable) },
			3, "proceed check answered 503 Service Unavailable: db locked"},
		{"404 while the daemon restarts, then proceed", func(n int32, w http.ResponseWriter) {
			if n == 1 {
				http.Error(w, "unknown run", http.StatusNotFound)
				return
			}
			_, _ = w.Write([]byte(`{"proceed":true}`))
		}, 2, ""},
		{"403 while the daemon restarts, then proceed", func(n int32, w http.ResponseWriter) {
			if n == 1 {
				http.Error(w, "unknown run or invalid token", http.StatusForbidden)
				return
			}
			_, _ = w.Write([]byte(`{"proceed":true}`))
		}, 2, ""},
		{"400 is final", func(_ int32, w http.ResponseWriter) { http.Error(w, "bad", http.StatusBadRequest) },
			1, "proceed check answered 400 Bad Request: bad"},
		{"garbage", func(_ int32, w http.ResponseWriter) { _, _ = w.Write([]byte(`<html>proxy login</html>`)) },
			1, "decode proceed answer"},
		{"proceed with a refusal", func(_ int32, w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"proceed":true,"refusal":{"code":"paused","reason":"x"}}`))
		}, 1, "inconsistent proceed answer"},
		{"empty answer", func(_ int32, w http.ResponseWriter) { _, _ = w.Write([]byte(`{}`)) },
			1, "inconsistent proceed answer"},
		{"timeout", func(_ int32, _ http.ResponseWriter) { time.Sleep(time.Second) },
			3, "Client.Timeout exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.Method != http.MethodGet || req.Header.Get("Authorization") != "Bearer tok" {
					t.Errorf("proceed check: %s with %q", req.Method, req.Header.Get("Authorization"))
				}
				tc.handler(n.Add(1), w)
			}))
			t.Cleanup(srv.Close)
			ref := fastChecker().Check(t.Context(), srv.URL+ProceedPath("r"), "tok")
			require.Equal(t, tc.attempts, n.Load(), "attempts")
			if tc.want == "" {
				require.Nil(t, ref)
				return
			}
			require.NotNil(t, ref)
			require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
			require.Contains(t, ref.Reason, tc.want)
			require.Contains(t, ref.Reason, "nothing applied")
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		start := time.Now()
		ref := fastChecker().Check(t.Context(), "http://"+addr+ProceedPath("r"), "tok")
		require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
		require.Contains(t, ref.Reason, "connection refused")
		require.Less(t, time.Since(start), 5*time.Second, "bounded")
	})
	t.Run("default attempts", func(t *testing.T) {
		// Six tries by default (about 30 s of doubling waits from 1 s,
		// shortened here), then it fails closed.
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		c := Checker{Backoff: time.Millisecond}
		ref := c.Check(t.Context(), srv.URL+ProceedPath("r"), "tok")
		require.Equal(t, engine.CodeDaemonUnreachable, ref.Code)
		require.Equal(t, int32(6), n.Load())
	})
}
