package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/planparse"
	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/runner"
)

// realPlan parses one of planparse's fixtures, made by real Terraform.
func realPlan(t *testing.T, name string) *planparse.Plan {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "planparse", "testdata", name, "plan.json"))
	require.NoError(t, err)
	defer f.Close()
	p, err := planparse.Parse(f)
	require.NoError(t, err)
	return p
}

func okResult(t *testing.T, runID string) Result {
	return ResultOf(runID, runner.Result{
		Plan:     realPlan(t, "content_drift"),
		ExitCode: 2,
		Tool:     "terraform 1.11.4",
		Commit:   "0123abc",
		Phases:   []drift.Phase{{Name: "init", Duration: time.Second}, {Name: "plan", Duration: 2 * time.Second}},
	}, nil)
}

func TestNewToken(t *testing.T) {
	a, ha := NewToken()
	b, hb := NewToken()
	require.NotEqual(t, a, b)
	require.Len(t, a, 43) // 32 bytes, base64url without padding
	require.Equal(t, HashToken(a), ha)
	require.NotEqual(t, ha, hb)
	h, err := ParseHash(FormatHash(ha))
	require.NoError(t, err)
	require.Equal(t, ha, h)
	_, err = ParseHash("abc")
	require.Error(t, err)
	require.NotContains(t, FormatHash(ha), a)
}

// TestResultRoundTrip sends a parsed plan of a real Terraform run through
// JSON and back, and checks that no attribute value is on the wire.
func TestResultRoundTrip(t *testing.T) {
	in := okResult(t, "run-1")
	b, err := json.Marshal(in)
	require.NoError(t, err)
	for _, value := range []string{"tampered", `"v1"`, "/driftwatch-fixture", `"same"`} {
		require.NotContains(t, string(b), value, "an attribute value crossed the wire")
	}
	require.Contains(t, string(b), "dwtest_file.a")
	var out Result
	require.NoError(t, json.Unmarshal(b, &out))
	if d := cmp.Diff(in, out); d != "" {
		t.Fatalf("round trip mismatch (-want +got):\n%s", d)
	}
	res, err := out.Unpack()
	require.NoError(t, err)
	require.Equal(t, in.Result, res)
}

func TestResultErrors(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantPhase string
		wantMsg   string
		timeout   bool
		canceled  bool
	}{
		{
			name:      "runner error",
			err:       &runner.Error{Phase: "plan", Reason: "Error: no such bucket", Err: errors.New("exit status 1")},
			wantPhase: "plan", wantMsg: "plan: Error: no such bucket",
		},
		{
			name:      "timeout",
			err:       &runner.Error{Phase: "plan", Reason: "run timed out after 1m0s", Err: errors.Join(runner.ErrTimeout, errors.New("signal: interrupt"))},
			wantPhase: "plan", wantMsg: "plan: run timed out after 1m0s", timeout: true,
		},
		{
			name:      "canceled",
			err:       &runner.Error{Phase: "init", Reason: "context canceled", Err: context.Canceled},
			wantPhase: "init", wantMsg: "init: context canceled", canceled: true,
		},
		{
			name:      "plain error",
			err:       errors.New("boom"),
			wantPhase: "runner", wantMsg: "runner: boom",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			partial := runner.Result{Tool: "tofu 1.10.6", Phases: []drift.Phase{{Name: "source", Duration: time.Millisecond}}}
			in := ResultOf("r", partial, tc.err)
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var out Result
			require.NoError(t, json.Unmarshal(b, &out))
			res, err := out.Unpack()
			require.Equal(t, partial, res, "partial results (tool, phases) survive a failure")
			var re *runner.Error
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.wantPhase, re.Phase)
			require.Equal(t, tc.wantMsg, err.Error())
			require.Equal(t, tc.timeout, errors.Is(err, runner.ErrTimeout))
			require.Equal(t, tc.canceled, errors.Is(err, context.Canceled))
		})
	}
	_, err := Result{Version: Version, RunID: "r"}.Unpack()
	require.Error(t, err, "neither plan nor error")
}

func TestSpec(t *testing.T) {
	s := Spec{
		Version: Version, RunID: "r1", Workspace: "prod-net", Binary: "tofu",
		Source:         Source{Git: &Git{URL: "https://git.example/infra.git", Ref: "main", Path: "net", CredentialsFile: "/etc/driftwatch/secrets/git-credentials"}},
		TFWorkspace:    "prod",
		VarFiles:       []string{"prod.tfvars"},
		Vars:           map[string]string{"region": "eu-west-1"},
		Env:            map[string]string{"AWS_REGION": "eu-west-1"},
		SecretEnvFiles: map[string]string{"AWS_SECRET_ACCESS_KEY": "/etc/driftwatch/secrets/AWS_SECRET_ACCESS_KEY"},
		BackendConfig:  []string{"key=net.tfstate"},
		Timeout:        Duration(10 * time.Minute), KillGrace: Duration(5 * time.Second),
		WorkDir: "/work", GitCacheDir: "/work/git",
		CallbackURL: "http://driftwatch.ops.svc:8080/internal/v1/runs/r1/result",
		TokenFile:   "/etc/driftwatch/run/token",
		ExpiresAt:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	b, err := s.Encode()
	require.NoError(t, err)
	require.Contains(t, string(b), `"timeout": "10m0s"`)
	got, err := DecodeSpec(bytes.NewReader(b))
	require.NoError(t, err)
	if d := cmp.Diff(&s, got); d != "" {
		t.Fatalf("spec round trip (-want +got):\n%s", d)
	}
	req := got.Request()
	require.Equal(t, runner.Request{
		RunID: "r1", Workspace: "prod-net", Binary: "tofu",
		Source:         runner.Source{Git: &runner.Git{URL: "https://git.example/infra.git", Ref: "main", Path: "net", CredentialsFile: "/etc/driftwatch/secrets/git-credentials"}},
		TFWorkspace:    "prod",
		VarFiles:       []string{"prod.tfvars"},
		Vars:           map[string]string{"region": "eu-west-1"},
		Env:            map[string]string{"AWS_REGION": "eu-west-1"},
		SecretEnvFiles: map[string]string{"AWS_SECRET_ACCESS_KEY": "/etc/driftwatch/secrets/AWS_SECRET_ACCESS_KEY"},
		BackendConfig:  []string{"key=net.tfstate"},
		Timeout:        10 * time.Minute, KillGrace: 5 * time.Second,
		WorkDir: "/work", GitCacheDir: "/work/git",
	}, req)

	_, err = DecodeSpec(strings.NewReader(`{"version":2,"source":{}}`))
	require.EqualError(t, err, "invalid spec: unsupported spec version 2 (this build speaks 1)\n"+
		"run_id is required\nworkspace is required\nexactly one of source.path and source.git is required\n"+
		"callback_url: \"\" is not an absolute http(s) URL\ntoken_file is required\nexpires_at is required")
	_, err = DecodeSpec(strings.NewReader(`{`))
	require.ErrorContains(t, err, "decode spec")
}

// receiverServer serves a Receiver on Route, like the app's server.
func receiverServer(t *testing.T, r *Receiver) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle(Route, r)
	mux.Handle(ProceedRoute, r.ProceedHandler())
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
		done := make(chan error, 1)
		go func() { done <- fast.Post(t.Context(), srv.URL+ResultPath("late"), tok, okResult(t, "late")) }()
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

// noApply is the ApplyFunc of a detection spec's test: never called.
func noApply(t *testing.T) ApplyFunc {
	return func(context.Context, runner.Request, *Remediation, func(context.Context) *remediate.Refusal) (remediate.Outcome, error) {
		t.Fatal("a detection spec was applied")
		return remediate.Outcome{}, nil
	}
}

// runnerFunc adapts a function to runner.Runner.
type runnerFunc func(context.Context, runner.Request) (runner.Result, error)

func (f runnerFunc) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
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
		var got runner.Request
		p := runPod(t, specPath, runnerFunc(func(_ context.Context, req runner.Request) (runner.Result, error) {
			got = req
			return want.Result, nil
		}), noApply(t))
		require.NoError(t, p.runnerErr)
		require.NoError(t, p.reporterErr)
		require.Equal(t, runner.Request{RunID: "pod-run", Workspace: "ws", Source: runner.Source{Path: "/src"},
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
		p := runPod(t, specPath, runnerFunc(func(context.Context, runner.Request) (runner.Result, error) {
			return runner.Result{Tool: "terraform 1.11.4"}, &runner.Error{Phase: "init", Reason: "Error: Failed to query available provider packages"}
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
		p := runPod(t, specPath, runnerFunc(func(context.Context, runner.Request) (runner.Result, error) {
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
		p := runPod(t, specPath, runnerFunc(func(context.Context, runner.Request) (runner.Result, error) {
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
		err := RunInPod(t.Context(), p, socketPath(t), runnerFunc(func(context.Context, runner.Request) (runner.Result, error) {
			t.Fatal("ran with an invalid spec")
			return runner.Result{}, nil
		}), noApply(t))
		require.ErrorContains(t, err, "invalid spec")
		err = (&Reporter{}).Report(t.Context(), p, socketPath(t))
		require.ErrorContains(t, err, "invalid spec")
	})
	t.Run("no reporter", func(t *testing.T) {
		specPath, _, _ := writeSpec(t, t.TempDir(), srv.URL+ResultPath("pod-run"), time.Now().Add(300*time.Millisecond))
		err := RunInPod(t.Context(), specPath, socketPath(t), runnerFunc(func(context.Context, runner.Request) (runner.Result, error) {
			t.Fatal("ran without a reporter to hand the result to")
			return runner.Result{}, nil
		}), noApply(t))
		require.ErrorContains(t, err, "connect to the reporter")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
