package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/store"
)

// testReadToken is the read-only token of these tests; like testToken it
// must never show in a response or a log line.
const testReadToken = "read-CANARY-7c1e-token"

// accessHarness serves run "done-1" (a stored log) and "live-1" (a live
// log, already ended, so a stream of it ends at once).
func accessHarness(t *testing.T) (*logHarness, Options) {
	h, o := newLogHarness(t)
	o.Config.TokenFile = ""
	h.store.addRun(store.Run{ID: "done-1", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, FinishedAt: testNow.Add(time.Minute), Status: "clean"})
	h.logs.logs["done-1"] = []byte("== plan ==\nNo changes.\n")
	h.store.addRun(store.Run{ID: "live-1", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, Status: store.RunRunning})
	l := runlog.New(1<<20, nil)
	l.Printf("== init ==")
	l.Close("clean")
	h.live["live-1"] = l
	return h, o
}

// reads are the requests that need a read credential.
var reads = []struct {
	name, path, accept string
	page               bool
}{
	{"stored log", "/api/v1/runs/done-1/logs", "", false},
	{"stored log stream", "/api/v1/runs/done-1/logs", "text/event-stream", false},
	{"live log snapshot", "/api/v1/runs/live-1/logs", "text/plain", false},
	{"live log stream", "/api/v1/runs/live-1/logs", "text/event-stream", false},
	{"run page", "/runs/done-1", "", true},
	{"live run page", "/runs/live-1", "", true},
}

// Run logs and run pages need the API token or the read token, as a
// bearer token or an HTTP Basic password, unless reads are open; 403 says
// how to configure when no token is; no answer and no log line shows a
// token. The other reads stay open.
func TestReadAccess(t *testing.T) {
	for _, c := range []struct {
		name                 string
		token, readToken     bool
		open                 bool
		anon, api, read, bad int // status without, with each token, with a wrong one
	}{
		{"api token only", true, false, false, 401, 200, 401, 401},
		{"api and read token", true, true, false, 401, 200, 200, 401},
		{"read token only", false, true, false, 401, 401, 200, 401},
		{"no token", false, false, false, 403, 403, 403, 403},
		{"open reads", true, true, true, 200, 200, 200, 200},
		{"open reads, no token", false, false, true, 200, 200, 200, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, o := accessHarness(t)
			if c.token {
				o.Config.TokenFile = writeToken(t, testToken+"\n")
			}
			if c.readToken {
				o.Config.ReadTokenFile = writeToken(t, " "+testReadToken+"\n")
			}
			o.Config.OpenReads = c.open
			ts := serve(t, o)
			var seen strings.Builder
			for _, rd := range reads {
				for _, cred := range []struct {
					name string
					hdr  map[string]string
					want int
				}{
					{"anonymous", nil, c.anon},
					{"bearer api token", bearerAuth(testToken), c.api},
					{"basic api token", basicAuth(testToken), c.api},
					{"bearer read token", bearerAuth(testReadToken), c.read},
					{"basic read token", basicAuth(testReadToken), c.read},
					{"wrong bearer", bearerAuth("wrong-CANARY"), c.bad},
					{"wrong basic", basicAuth("wrong-CANARY"), c.bad},
					{"other scheme", map[string]string{"Authorization": "Digest x"}, c.bad},
				} {
					hdr := map[string]string{}
					for k, v := range cred.hdr {
						hdr[k] = v
					}
					if rd.accept != "" {
						hdr["Accept"] = rd.accept
					}
					code, rh, body := do(t, http.MethodGet, ts.URL+rd.path, hdr)
					require.Equal(t, cred.want, code, "%s, %s: %s", rd.name, cred.name, body)
					fmt.Fprintln(&seen, rh, body)
					switch {
					case code == http.StatusUnauthorized && rd.page:
						require.Equal(t, `Basic realm="driftwatch"`, rh.Get("WWW-Authenticate"), rd.name)
						require.Equal(t, "text/html; charset=utf-8", rh.Get("Content-Type"))
						require.Contains(t, body, "Sign in to read this run")
					case code == http.StatusUnauthorized:
						require.Equal(t, `Bearer realm="driftwatch"`, rh.Get("WWW-Authenticate"), rd.name)
						require.Contains(t, body, "read credential")
					case code == http.StatusForbidden:
						require.Empty(t, rh.Get("WWW-Authenticate"))
						for _, key := range []string{"server.read_token_file", "server.token_file", "server.open_reads"} {
							require.Contains(t, body, key, rd.name)
						}
					case code == http.StatusOK && rd.page:
						require.Contains(t, body, `<pre class="log">`)
					case code == http.StatusOK:
						require.Contains(t, body, "==")
					}
				}
			}
			// The other reads stay open.
			for _, path := range []string{"/", "/workspaces/prod-network", "/api/v1/workspaces", "/api/v1/runs/done-1", "/api/v1/workspaces/prod-network/runs",
				"/api/v1/silences", "/silences"} {
				code, _, body := get(t, ts.URL+path)
				require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
			}
			all := seen.String() + h.harness.logs.String()
			for _, canary := range []string{testToken, testReadToken, "CANARY"} {
				require.NotContains(t, all, canary)
			}
		})
	}
}

// The read token reads logs but never passes for a mutating call, as a
// bearer token or otherwise; Basic auth never passes for one either (a
// browser would replay it on a cross-site request).
func TestReadTokenCannotMutate(t *testing.T) {
	h, o := accessHarness(t)
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.ReadTokenFile = writeToken(t, testReadToken)
	ts := serve(t, o)
	code, _, body := do(t, http.MethodGet, ts.URL+"/api/v1/runs/done-1/logs", bearerAuth(testReadToken))
	require.Equal(t, http.StatusOK, code, body)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/workspaces/sandbox/runs"}, {http.MethodPost, "/api/v1/runs/live-1/cancel"},
		{http.MethodPost, "/api/v1/silences"}, {http.MethodDelete, "/api/v1/silences/sil-1"},
	} {
		// The read token authenticates, as a viewer: 403, role too low.
		code, rh, body := do(t, c.method, ts.URL+c.path, bearerAuth(testReadToken))
		require.Equal(t, http.StatusForbidden, code, "%s %s: %s", c.method, c.path, body)
		require.Contains(t, body, "this needs the operator role; token:read has viewer")
		require.Empty(t, rh.Get("WWW-Authenticate"))
		// Basic auth never authenticates a mutating call: 401.
		for _, hdr := range []map[string]string{basicAuth(testReadToken), basicAuth(testToken)} {
			code, rh, body := do(t, c.method, ts.URL+c.path, hdr)
			require.Equal(t, http.StatusUnauthorized, code, "%s %s %v: %s", c.method, c.path, hdr, body)
			require.Equal(t, `Bearer realm="driftwatch"`, rh.Get("WWW-Authenticate"))
		}
	}
	added, expired := h.silenceCalls()
	require.Empty(t, added)
	require.Empty(t, expired)
	require.Empty(t, h.triggeredNames())
	code, _, body = do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", bearerAuth(testToken))
	require.Equal(t, http.StatusAccepted, code, body)
}

// A log that starts with runlog.ValuesNotice holds attribute values: it
// goes only to a reader with a credential, even with open reads; stored
// and live, as text, stream and page.
func TestValuesLogNeedsCredential(t *testing.T) {
	h, o := accessHarness(t)
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.ReadTokenFile = writeToken(t, testReadToken)
	o.Config.OpenReads = true
	const value = "password = \"hunter2-CANARY\""
	h.logs.logs["done-1"] = []byte(runlog.ValuesNotice + "\n  ~ " + value + "\n")
	l := runlog.New(1<<20, nil)
	l.Printf("%s", runlog.ValuesNotice)
	l.Printf("  ~ %s", value)
	h.live["live-1"] = l // in flight
	h.store.addRun(store.Run{ID: "plain-1", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, FinishedAt: testNow, Status: "clean"})
	h.logs.logs["plain-1"] = []byte("== plan ==\n" + runlog.ValuesNotice + "\n") // not at the start: no values log
	ts := serve(t, o)

	for _, rd := range reads {
		hdr := map[string]string{}
		if rd.accept != "" {
			hdr["Accept"] = rd.accept
		}
		code, rh, body := do(t, http.MethodGet, ts.URL+rd.path, hdr)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", rd.name, body)
		require.NotContains(t, body, "hunter2")
		require.Contains(t, body, "log_plan_text")
		if rd.page {
			require.Equal(t, `Basic realm="driftwatch"`, rh.Get("WWW-Authenticate"))
		} else {
			require.Equal(t, `Bearer realm="driftwatch"`, rh.Get("WWW-Authenticate"))
		}
		for _, auth := range []map[string]string{bearerAuth(testReadToken), basicAuth(testToken)} {
			for k, v := range auth {
				hdr[k] = v
			}
			if rd.name == "live log stream" {
				// In flight: read the replay, then let the run end.
				resp := openStream(t, ts.URL+rd.path, hdr)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				evs := readEvents(resp)
				require.Equal(t, sseEvent{data: runlog.ValuesNotice}, next(t, evs))
				require.Equal(t, sseEvent{data: "  ~ " + value}, next(t, evs))
				resp.Body.Close()
				continue
			}
			code, _, body = do(t, http.MethodGet, ts.URL+rd.path, hdr)
			require.Equal(t, http.StatusOK, code, "%s: %s", rd.name, body)
			require.Contains(t, body, "hunter2")
		}
	}
	code, _, body := get(t, ts.URL+"/api/v1/runs/plain-1/logs")
	require.Equal(t, http.StatusOK, code, body)

	// A live log whose first line is not written yet: an anonymous stream
	// waits for it and is refused when it is the notice.
	h.store.addRun(store.Run{ID: "fresh", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, Status: store.RunRunning})
	fresh := runlog.New(1<<20, nil)
	h.mu.Lock()
	h.live["fresh"] = fresh
	h.mu.Unlock()
	type answer struct {
		code int
		body string
		err  error
	}
	got := make(chan answer, 1)
	// Built here: require must not fail from another goroutine.
	req := streamRequest(t, ts.URL+"/api/v1/runs/fresh/logs", map[string]string{"Accept": "text/event-stream"})
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- answer{code: resp.StatusCode, body: string(b)}
	}()
	select {
	case a := <-got:
		t.Fatalf("answered before the first line: %d %s (%v)", a.code, a.body, a.err)
	case <-time.After(100 * time.Millisecond):
	}
	fresh.Printf("%s", runlog.ValuesNotice)
	fresh.Printf("  ~ %s", value)
	select {
	case a := <-got:
		require.NoError(t, a.err)
		require.Equal(t, http.StatusUnauthorized, a.code, a.body)
		require.NotContains(t, a.body, "hunter2")
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}

	// With reads open but no token to authenticate with, nobody can read
	// it: 403 says what to configure.
	o.Config.TokenFile, o.Config.ReadTokenFile = "", ""
	ts = serve(t, o)
	code, _, body = get(t, ts.URL+"/api/v1/runs/done-1/logs")
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "server.read_token_file")
	require.NotContains(t, body, "hunter2")
	require.NotContains(t, h.harness.logs.String(), "CANARY")
}

// openStream GETs url with hdr and returns the response, not read yet.
func openStream(t *testing.T, url string, hdr map[string]string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(streamRequest(t, url, hdr))
	require.NoError(t, err)
	return resp
}

// streamRequest is openStream's request: a GET of url with hdr, bound to
// the test's context.
func streamRequest(t *testing.T, url string, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// Only allowed Host names pass (DNS rebinding): 421 otherwise, on every
// route but the probes, logged at warn with the host capped.
func TestHostAllowlist(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.ExternalURL = "https://Drift.Example.com/dw"
	o.CallbackURL = "http://driftwatch.ops.svc:8080"
	o.Config.AllowedHosts = []string{"status.internal", "*.corp.example"}
	ts := serve(t, o)
	send := func(method, host, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, nil)
		require.NoError(t, err)
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{
		"localhost", "localhost:8080", "LocalHost:8080", "127.0.0.1", "127.0.0.1:8080", "[::1]:8080", "[::1]", "10.1.2.3:80",
		"drift.example.com", "drift.example.com:443", "DRIFT.EXAMPLE.COM.", "driftwatch.ops.svc:8080",
		"status.internal", "status.internal:8080", "a.corp.example", "a.b.corp.example:8443",
	} {
		code, body := send(http.MethodGet, host, "/api/v1/workspaces")
		require.Equal(t, http.StatusOK, code, "%s: %s", host, body)
	}
	code, _ := send(http.MethodPost, "localhost:8080", "/api/v1/workspaces/sandbox/runs")
	require.Equal(t, http.StatusAccepted, code)
	for _, host := range []string{
		"evil.example", "evil.example:8080", "corp.example", "evilcorp.example", "drift.example.com.evil.example",
		"127.0.0.1.evil.example", "localhost.evil.example", "status.internal.evil.example", "example.com",
	} {
		for _, req := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/workspaces"}, {http.MethodGet, "/runs/x"}, {http.MethodGet, "/"},
			{http.MethodGet, "/metrics"}, {http.MethodPost, "/api/v1/workspaces/sandbox/runs"},
		} {
			code, body := send(req.method, host, req.path)
			require.Equal(t, http.StatusMisdirectedRequest, code, "%s %s %s", host, req.method, req.path)
			require.Contains(t, body, "server.allowed_hosts")
		}
	}
	require.Len(t, h.triggeredNames(), 1, "a refused POST triggers nothing")
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := send(http.MethodGet, "evil.example", path)
		require.Equal(t, http.StatusOK, code, body)
	}
	long := strings.Repeat("a", 300) + ".example"
	code, _ = send(http.MethodGet, long, "/")
	require.Equal(t, http.StatusMisdirectedRequest, code)
	logs := h.logs.String()
	require.Contains(t, logs, `level=WARN msg="http request refused: host not allowed (server.allowed_hosts)" host=evil.example method=GET path=/api/v1/workspaces`)
	require.Contains(t, logs, "host="+strings.Repeat("a", maxLoggedHost)+"…")
	require.NotContains(t, logs, strings.Repeat("a", maxLoggedHost+1))
	require.NotContains(t, logs, testToken)
}

func TestHostPolicy(t *testing.T) {
	p, err := newHostPolicy([]string{"drift.example.com"}, []string{"Status.Internal.", "*.corp.example"})
	require.NoError(t, err)
	for host, want := range map[string]bool{
		"": false, ":8080": false, "[]:80": false, "localhost": true, "status.internal": true, "x.corp.example": true,
		"corp.example": false, ".corp.example": false, "[::ffff:127.0.0.1]:1": true, "[fe80::1%25eth0]:80": true, "::1": true,
		"2130706433": false, "127.0.0.1@evil.example": false, "evil.example:80@127.0.0.1": false, "[::1].evil.example": false,
	} {
		require.Equal(t, want, p.allows(host), host)
	}
	for _, bad := range []string{"*", "*.", "", "https://x.example", "x.example:8080", "a.*.example", "x.example/path"} {
		_, err := newHostPolicy(nil, []string{bad})
		require.Error(t, err, bad)
	}
}

// The commands a page shows address the API at the external URL, else at
// the listen address, never at the Host a request names.
func TestPageCommandsIgnoreHost(t *testing.T) {
	for _, c := range []struct{ listen, external, want string }{
		{"0.0.0.0:9090", "", "http://127.0.0.1:9090"},
		{"[::]:9090", "", "http://127.0.0.1:9090"},
		{":9090", "", "http://127.0.0.1:9090"},
		{"10.0.0.5:8080", "", "http://10.0.0.5:8080"},
		{"[::1]:8080", "", "http://[::1]:8080"},
		{"", "", "http://127.0.0.1:8080"},
		{"0.0.0.0:9090", "https://drift.example.com/dw/", "https://drift.example.com/dw"},
	} {
		t.Run(c.listen+" "+c.external, func(t *testing.T) {
			h := newHarness(t)
			o := h.options()
			o.Control = withRemediation{h, remediationFixture(h)}
			o.Config.Listen, o.Config.ExternalURL = c.listen, c.external
			o.Config.AllowedHosts = []string{"forged.example"}
			s, err := New(o)
			require.NoError(t, err)
			ts := serveHandler(t, s.Handler())
			for _, path := range []string{"/workspaces/prod-network", "/remediations/rem-pend"} {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts+path, nil)
				require.NoError(t, err)
				req.Host = "forged.example:1234"
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				body := string(b)
				require.NotContains(t, body, "forged.example")
				require.Contains(t, body, "--server "+c.want+" ")
				if path == "/workspaces/prod-network" {
					require.Contains(t, body, `$DRIFTWATCH_TOKEN" `+c.want+`/api/v1/workspaces/prod-network/runs`)
				}
			}
		})
	}
}

// serveHandler serves h on a real listener and returns its URL.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// liveServer is a Server over one live run, "live-1" (and the stored log
// of run-net-3), served through
// Serve (the daemon's http.Server and its timeouts); tune adjusts the
// Server before it serves.
func liveServer(t *testing.T, tune func(*Server)) (*Server, *runlog.Log, string) {
	t.Helper()
	h, o := newLogHarness(t)
	h.store.addRun(store.Run{ID: "live-1", Workspace: "prod-network", Trigger: "schedule", StartedAt: testNow, Status: store.RunRunning})
	l := runlog.New(1<<20, nil)
	l.Printf("== init ==")
	h.live["live-1"] = l
	h.logs.logs["run-net-3"] = []byte("== plan ==\n")
	s, err := New(o)
	require.NoError(t, err)
	tune(s)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		l.Close("clean") // ends open streams, so shutdown is quick
		cancel()
		require.NoError(t, <-done)
	})
	return s, l, "http://" + ln.Addr().String()
}

// The number of log streams open at once is capped: one more answers 503
// with Retry-After; a stream that ends frees its slot.
func TestLogStreamCap(t *testing.T) {
	s, _, base := liveServer(t, func(s *Server) { s.api.MaxStreams = 2 })
	hdr := map[string]string{"Accept": "text/event-stream", "Authorization": "Bearer " + testToken}
	var open []*http.Response
	for range 2 {
		resp := openStream(t, base+"/api/v1/runs/live-1/logs", hdr)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, sseEvent{data: "== init =="}, next(t, readEvents(resp)))
		open = append(open, resp)
	}
	require.EqualValues(t, 2, s.api.OpenStreams())
	code, rh, body := do(t, http.MethodGet, base+"/api/v1/runs/live-1/logs", hdr)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Equal(t, "10", rh.Get("Retry-After"))
	require.Contains(t, body, "too many log streams")
	// Stored logs streamed as events count too.
	code, _, body = do(t, http.MethodGet, base+"/api/v1/runs/run-net-3/logs", hdr)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	// A snapshot is not a stream.
	code, _, body = do(t, http.MethodGet, base+"/api/v1/runs/live-1/logs", map[string]string{"Accept": "text/plain", "Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusOK, code, body)

	open[0].Body.Close()
	require.Eventually(t, func() bool { return s.api.OpenStreams() == 1 }, 10*time.Second, 10*time.Millisecond)
	resp := openStream(t, base+"/api/v1/runs/live-1/logs", hdr)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	open[1].Body.Close()
}

// A client that stops reading cannot hold a stream (and the goroutine
// serving it) forever: once the connection's buffers are full, a write
// waits at most sseWriteTimeout and the handler returns.
func TestLogStreamWriteDeadline(t *testing.T) {
	s, l, base := liveServer(t, func(s *Server) { s.api.StreamWriteTimeout = 200 * time.Millisecond })
	var d net.Dialer
	conn, err := d.DialContext(t.Context(), "tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err = fmt.Fprintf(conn, "GET /api/v1/runs/live-1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200 OK\r\n", status)
	require.EqualValues(t, 1, s.api.OpenStreams())
	// The client reads nothing more; the run writes on.
	line := strings.Repeat("x", 32<<10)
	deadline := time.Now().Add(30 * time.Second) // generous: the point is that it ends
	for s.api.OpenStreams() != 0 {
		require.True(t, time.Now().Before(deadline), "the stream of a client that stopped reading never ended")
		l.Printf("%s", line)
		time.Sleep(time.Millisecond)
	}
}

// The server's WriteTimeout does not cut a live stream short: the
// stream's own per-write deadline replaces it.
func TestLogStreamOutlivesWriteTimeout(t *testing.T) {
	_, l, base := liveServer(t, func(s *Server) { s.writeTimeout = 100 * time.Millisecond })
	resp := openStream(t, base+"/api/v1/runs/live-1/logs", map[string]string{"Accept": "text/event-stream", "Authorization": "Bearer " + testToken})
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs := readEvents(resp)
	require.Equal(t, sseEvent{data: "== init =="}, next(t, evs))
	for i := range 6 {
		time.Sleep(100 * time.Millisecond) // 600 ms in all: past WriteTimeout
		l.Printf("line %d", i)
		require.Equal(t, sseEvent{data: fmt.Sprintf("line %d", i)}, next(t, evs))
	}
	l.Close("drift")
	require.Equal(t, sseEvent{event: "end", data: `{"status":"drift"}`}, next(t, evs))
}

func TestNewChecksAccessOptions(t *testing.T) {
	h := newHarness(t)
	for name, c := range map[string]struct {
		tune func(*Options)
		want string
	}{
		"empty read token":   {func(o *Options) { o.Config.ReadTokenFile = writeToken(t, " \n") }, "Options.Config.ReadTokenFile: token file is empty"},
		"missing read token": {func(o *Options) { o.Config.ReadTokenFile = "/nonexistent/read-token" }, "Options.Config.ReadTokenFile: read token file: open /nonexistent/read-token"},
		"bad callback URL":   {func(o *Options) { o.CallbackURL = "driftwatch.ops.svc:8080" }, `Options.CallbackURL "driftwatch.ops.svc:8080" must be an absolute http(s) URL`},
		"bare wildcard":      {func(o *Options) { o.Config.AllowedHosts = []string{"ok.example", "*"} }, `Options.Config.AllowedHosts[1] "*" is not a host name`},
		"URL as host":        {func(o *Options) { o.Config.AllowedHosts = []string{"https://x.example"} }, `Options.Config.AllowedHosts[0] "https://x.example"`},
	} {
		t.Run(name, func(t *testing.T) {
			o := h.options()
			c.tune(&o)
			_, err := New(o)
			require.ErrorContains(t, err, c.want)
		})
	}
	o := h.options()
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.ReadTokenFile = writeToken(t, testToken+"\n")
	_, err := New(o)
	require.NoError(t, err)
	require.Contains(t, h.logs.String(), "the read token (server.read_token_file) is the API token")
	require.NotContains(t, h.logs.String(), testToken)
}

// A token file that went missing after start revokes its token: every
// other token still works, a wrong or the revoked token gets 401 (not
// 500), and the log names the file, never a token.
func TestReadTokenUnavailable(t *testing.T) {
	h, o := accessHarness(t)
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.ReadTokenFile = writeToken(t, testReadToken)
	ts := serve(t, o)
	require.NoError(t, os.Remove(o.Config.TokenFile))
	for _, tok := range []string{testToken, "wrong-CANARY"} {
		code, _, body := do(t, http.MethodGet, ts.URL+"/api/v1/runs/done-1/logs", bearerAuth(tok))
		require.Equal(t, http.StatusUnauthorized, code, body)
		require.JSONEq(t, `{"error": "invalid read credential: it is neither the API token nor the read token"}`, body)
		code, _, body = do(t, http.MethodGet, ts.URL+"/runs/done-1", basicAuth(tok))
		require.Equal(t, http.StatusUnauthorized, code, body)
		code, _, body = do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/runs", bearerAuth(tok))
		require.Equal(t, http.StatusUnauthorized, code, body)
	}
	code, _, body := do(t, http.MethodGet, ts.URL+"/api/v1/runs/done-1/logs", bearerAuth(testReadToken))
	require.Equal(t, http.StatusOK, code, body)
	logs := h.harness.logs.String()
	require.Contains(t, logs, "credential file unusable")
	require.Contains(t, logs, "read token file: open "+o.Config.TokenFile)
	require.Contains(t, logs, "option=Config.TokenFile")
	require.NotContains(t, logs, testToken)
	require.NotContains(t, logs, testReadToken)
	require.NotContains(t, logs, "CANARY")
}
