package remote

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// receiverServer serves a Receiver on Route, like the app's server.
func receiverServer(t *testing.T, r *Receiver) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(Route, r)
	mux.Handle(ProceedRoute, r.ProceedHandler())
	mux.Handle(LogRoute, r.LogHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type delivery struct {
	method, token, encoding, contentType string
	body                                 []byte
}

func send(t *testing.T, url string, d delivery) (int, string) {
	t.Helper()
	if d.method == "" {
		d.method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(t.Context(), d.method, url, bytes.NewReader(d.body))
	require.NoError(t, err)
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	if d.encoding != "" {
		req.Header.Set("Content-Encoding", d.encoding)
	}
	ct := d.contentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(buf.String())
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestReceiver(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	const maxBody = 64 << 10
	r := NewReceiver(ReceiverOptions{MaxBodyBytes: maxBody, Now: func() time.Time { return *clock.Load() }})
	srv := receiverServer(t, r)
	url := func(id string) string { return srv.URL + ResultPath(id) }

	body := func(id string) []byte {
		b, err := json.Marshal(okResult(t, id))
		require.NoError(t, err)
		return b
	}
	arm := func(id string) (string, <-chan Delivery) {
		tok, hash := NewToken()
		ch, err := r.Expect(id, hash, now.Add(time.Hour))
		require.NoError(t, err)
		return tok, ch
	}

	t.Run("valid gzip", func(t *testing.T) {
		tok, ch := arm("valid")
		code, msg := send(t, url("valid"), delivery{token: tok, encoding: "gzip", body: gz(t, body("valid"))})
		require.Equal(t, http.StatusNoContent, code, msg)
		got := <-ch
		if d := cmp.Diff(Delivery{Result: okResult(t, "valid")}, got); d != "" {
			t.Fatalf("delivered result (-want +got):\n%s", d)
		}
	})
	t.Run("valid identity", func(t *testing.T) {
		tok, ch := arm("plain")
		code, msg := send(t, url("plain"), delivery{token: tok, body: body("plain")})
		require.Equal(t, http.StatusNoContent, code, msg)
		require.Equal(t, "plain", (<-ch).Result.RunID)
	})
	t.Run("identical re-post", func(t *testing.T) {
		// A retry whose first response was lost: answered 204 again,
		// delivered once.
		tok, ch := arm("replay")
		code, _ := send(t, url("replay"), delivery{token: tok, body: body("replay")})
		require.Equal(t, http.StatusNoContent, code)
		require.Equal(t, "replay", (<-ch).Result.RunID)
		code, msg := send(t, url("replay"), delivery{token: tok, encoding: "gzip", body: gz(t, body("replay"))})
		require.Equal(t, http.StatusNoContent, code, msg)
		// The same result encoded otherwise (indented, key order) is the
		// same result.
		var generic map[string]any
		require.NoError(t, json.Unmarshal(body("replay"), &generic))
		indented, err := json.MarshalIndent(generic, "", "    ")
		require.NoError(t, err)
		code, msg = send(t, url("replay"), delivery{token: tok, body: append(indented, '\n')})
		require.Equal(t, http.StatusNoContent, code, msg)
		// Also after the run stopped waiting and was re-armed with the same
		// hash (an adopted run): single use means delivered once.
		r.Forget("replay")
		code, _ = send(t, url("replay"), delivery{token: tok, body: body("replay")})
		require.Equal(t, http.StatusNoContent, code)
		ch, err = r.Expect("replay", HashToken(tok), now.Add(time.Hour))
		require.NoError(t, err)
		code, _ = send(t, url("replay"), delivery{token: tok, body: body("replay")})
		require.Equal(t, http.StatusNoContent, code)
		require.Empty(t, ch, "a re-post was delivered again")
	})
	t.Run("forged token", func(t *testing.T) {
		_, ch := arm("forged")
		forged, _ := NewToken()
		code, msg := send(t, url("forged"), delivery{token: forged, body: body("forged")})
		require.Equal(t, http.StatusForbidden, code, msg)
		require.Equal(t, "unknown run or invalid token", msg)
		// A token of another run is just as forged.
		other, _ := arm("other")
		code, _ = send(t, url("forged"), delivery{token: other, body: body("forged")})
		require.Equal(t, http.StatusForbidden, code)
		require.Empty(t, ch)
	})
	t.Run("unknown run and wrong token look alike", func(t *testing.T) {
		// The endpoint does not tell which runs exist.
		arm("exists")
		tok, _ := NewToken()
		wrongCode, wrongMsg := send(t, url("exists"), delivery{token: tok, body: body("exists")})
		unknownCode, unknownMsg := send(t, url("does-not-exist"), delivery{token: tok, body: body("does-not-exist")})
		require.Equal(t, http.StatusForbidden, wrongCode)
		require.Equal(t, wrongCode, unknownCode)
		require.Equal(t, wrongMsg, unknownMsg)
		// Malformed bodies too: the credential is checked first.
		unknownCode, unknownMsg = send(t, url("does-not-exist"), delivery{token: tok, body: []byte("{")})
		require.Equal(t, wrongCode, unknownCode)
		require.Equal(t, wrongMsg, unknownMsg)
	})
	t.Run("no token", func(t *testing.T) {
		arm("notoken")
		code, _ := send(t, url("notoken"), delivery{body: body("notoken")})
		require.Equal(t, http.StatusUnauthorized, code)
	})
	t.Run("unknown run", func(t *testing.T) {
		tok, _ := NewToken()
		code, msg := send(t, url("nope"), delivery{token: tok, body: body("nope")})
		require.Equal(t, http.StatusForbidden, code)
		require.Equal(t, "unknown run or invalid token", msg)
	})
	t.Run("expired", func(t *testing.T) {
		tok, ch := arm("expired")
		later := now.Add(time.Hour + time.Second)
		clock.Store(&later)
		defer clock.Store(&now)
		code, msg := send(t, url("expired"), delivery{token: tok, body: body("expired")})
		require.Equal(t, http.StatusGone, code, msg)
		require.Empty(t, ch)
	})
	t.Run("no longer awaited", func(t *testing.T) {
		tok, _ := arm("gone")
		r.Forget("gone")
		code, _ := send(t, url("gone"), delivery{token: tok, body: body("gone")})
		require.Equal(t, http.StatusGone, code)
	})
	t.Run("oversized", func(t *testing.T) {
		tok, ch := arm("big")
		big := bytes.Repeat([]byte("x"), maxBody+1)
		code, msg := send(t, url("big"), delivery{token: tok, body: big})
		require.Equal(t, http.StatusRequestEntityTooLarge, code, msg)
		// A small gzip body that inflates past the limit (a zip bomb).
		bomb := gz(t, append([]byte(`{"version":1,"run_id":"big","x":"`), bytes.Repeat([]byte("a"), 4*maxBody)...))
		require.Less(t, len(bomb), maxBody)
		code, msg = send(t, url("big"), delivery{token: tok, encoding: "gzip", body: bomb})
		require.Equal(t, http.StatusRequestEntityTooLarge, code, msg)
		require.Empty(t, ch)
		// The token was not spent by the refusals.
		code, _ = send(t, url("big"), delivery{token: tok, body: body("big")})
		require.Equal(t, http.StatusNoContent, code)
	})
	t.Run("malformed", func(t *testing.T) {
		tok, ch := arm("bad")
		for _, tc := range []struct {
			name string
			d    delivery
			code int
		}{
			{"not json", delivery{body: []byte("{")}, http.StatusBadRequest},
			{"other run", delivery{body: body("someone-else")}, http.StatusBadRequest},
			{"version", delivery{body: []byte(`{"version":9,"run_id":"bad","error":{"phase":"plan"}}`)}, http.StatusBadRequest},
			{"empty", delivery{body: []byte(`{"version":1,"run_id":"bad"}`)}, http.StatusBadRequest},
			{"content type", delivery{body: body("bad"), contentType: "text/plain"}, http.StatusUnsupportedMediaType},
			{"encoding", delivery{body: body("bad"), encoding: "br"}, http.StatusUnsupportedMediaType},
			{"bad gzip", delivery{body: []byte("not gzip"), encoding: "gzip"}, http.StatusBadRequest},
			{"method", delivery{method: http.MethodPut, body: body("bad")}, http.StatusMethodNotAllowed},
		} {
			tc.d.token = tok
			code, msg := send(t, url("bad"), tc.d)
			require.Equal(t, tc.code, code, "%s: %s", tc.name, msg)
		}
		require.Empty(t, ch)
	})
	t.Run("concurrent deliveries", func(t *testing.T) {
		tok, ch := arm("race")
		var wg sync.WaitGroup
		codes := make(chan int, 8)
		for range 8 {
			wg.Go(func() {
				code, _ := send(t, url("race"), delivery{token: tok, body: body("race")})
				codes <- code
			})
		}
		wg.Wait()
		close(codes)
		n := map[int]int{}
		for c := range codes {
			n[c]++
		}
		// One accepted, the others identical re-posts: 204 each, one
		// delivery.
		require.Equal(t, map[int]int{http.StatusNoContent: 8}, n)
		require.Len(t, ch, 1)
	})
	t.Run("expect twice", func(t *testing.T) {
		_, hash := NewToken()
		_, err := r.Expect("twice", hash, now.Add(time.Hour))
		require.NoError(t, err)
		_, err = r.Expect("twice", hash, now.Add(time.Hour))
		require.ErrorIs(t, err, ErrAlreadyExpected)
	})
	t.Run("tombstones purged", func(t *testing.T) {
		tok, _ := arm("old")
		r.Forget("old")
		later := now.Add(3 * time.Hour)
		clock.Store(&later)
		defer clock.Store(&now)
		_, h := NewToken()
		_, err := r.Expect("trigger-purge", h, later.Add(time.Hour))
		require.NoError(t, err)
		code, _ := send(t, url("old"), delivery{token: tok, body: body("old")})
		require.Equal(t, http.StatusForbidden, code)
	})
}

// TestReceiverConflict: a forged result posted first with the run's
// (leaked) token is accepted, but the real one arriving after it with a
// different body is answered 409 and reported to the awaiter as a
// conflict, so the run keeps neither; an identical re-post is not a
// conflict.
func TestReceiverConflict(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	srv := receiverServer(t, r)
	url := srv.URL + ResultPath("run-1")
	tok, hash := NewToken()
	ch, err := r.Expect("run-1", hash, time.Now().Add(time.Hour))
	require.NoError(t, err)
	enc := func(res Result) []byte {
		b, err := json.Marshal(res)
		require.NoError(t, err)
		return b
	}
	forged := ResultOf("run-1", runner.Result{Plan: &planparse.Plan{FormatVersion: "1.2"}, Tool: "terraform 1.11.4"}, nil)
	genuine := okResult(t, "run-1")

	code, msg := send(t, url, delivery{token: tok, body: enc(forged)})
	require.Equal(t, http.StatusNoContent, code, msg)
	code, msg = send(t, url, delivery{token: tok, encoding: "gzip", body: gz(t, enc(genuine))})
	require.Equal(t, http.StatusConflict, code, msg)
	require.Equal(t, "a different result was delivered for this run already", msg)

	require.Equal(t, Delivery{Result: forged}, <-ch, "the first result is handed over, to be held")
	require.Equal(t, Delivery{Conflict: ErrConflictingResults}, <-ch, "then the conflict: the run keeps neither")
	require.EqualError(t, ErrConflictingResults, "conflicting results posted: possible forgery")

	// Conflicts are reported once; every different post is refused.
	code, _ = send(t, url, delivery{token: tok, body: enc(genuine)})
	require.Equal(t, http.StatusConflict, code)
	require.Empty(t, ch)
	// The first body re-posted is not a conflict.
	code, _ = send(t, url, delivery{token: tok, body: enc(forged)})
	require.Equal(t, http.StatusNoContent, code)

	t.Run("after the awaiter left", func(t *testing.T) {
		tok, hash := NewToken()
		ch, err := r.Expect("run-2", hash, time.Now().Add(time.Hour))
		require.NoError(t, err)
		code, _ := send(t, srv.URL+ResultPath("run-2"), delivery{token: tok, body: enc(okResult(t, "run-2"))})
		require.Equal(t, http.StatusNoContent, code)
		<-ch
		r.Forget("run-2")
		other := ResultOf("run-2", runner.Result{Plan: &planparse.Plan{FormatVersion: "1.2"}}, nil)
		code, _ = send(t, srv.URL+ResultPath("run-2"), delivery{token: tok, body: enc(other)})
		require.Equal(t, http.StatusConflict, code)
	})
}
