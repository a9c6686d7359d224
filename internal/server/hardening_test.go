package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// In proxy mode the identity headers are believed only with the proxy's
// shared secret: from a trusted address without it (or with a wrong one,
// or two) they are ignored and the request is unauthenticated; the
// secret header never reaches a handler or the log.
func TestProxySharedSecret(t *testing.T) {
	h, _, o := proxyOptions(t, "127.0.0.0/8")
	seen := make(chan http.Header, 1)
	o.Handlers = map[string]http.Handler{"GET /hooks/echo": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	})}
	ts := serve(t, o)
	forged := func(secret ...string) map[string]string {
		hdr := proxied("pat", "pat@example.com", "platform")
		delete(hdr, config.DefaultProxySecretHeader)
		if len(secret) > 0 {
			hdr[config.DefaultProxySecretHeader] = secret[0]
		}
		return hdr
	}
	for name, hdr := range map[string]map[string]string{
		"no secret":     forged(),
		"wrong secret":  forged("wrong-CANARY-0123456789abcdef0123456789"),
		"secret prefix": forged(testProxySecret[:20]),
		"empty secret":  forged(""),
	} {
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/workspaces"}, {http.MethodGet, "/"}, {http.MethodPost, "/api/v1/workspaces/sandbox/runs"},
		} {
			code, _, body := do(t, c.method, ts.URL+c.path, hdr)
			require.Equal(t, http.StatusUnauthorized, code, "%s: %s %s: %s", name, c.method, c.path, body)
		}
	}
	// Two values, one of them right: refused too.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/api/v1/whoami", nil)
	require.NoError(t, err)
	for k, v := range forged() {
		req.Header.Set(k, v)
	}
	req.Header.Add(config.DefaultProxySecretHeader, "x")
	req.Header.Add(config.DefaultProxySecretHeader, testProxySecret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Empty(t, h.triggeredNames())

	// With the secret: the person. A token works without it.
	require.Equal(t, whoami{Name: "pat", Method: "proxy", Roles: []string{"admin"}},
		withoutCSRF(getWhoami(t, ts.URL, proxied("pat", "", "platform"))))
	require.Equal(t, "viewer-bot", getWhoami(t, ts.URL, bearerAuth(roleTokens[auth.RoleViewer])).Name)

	// The header is removed before any route, one that authenticates
	// itself too.
	code, _, _ := do(t, http.MethodGet, ts.URL+"/hooks/echo", proxied("pat", "", ""))
	require.Equal(t, http.StatusNoContent, code)
	got := <-seen
	require.Empty(t, got.Values(config.DefaultProxySecretHeader))
	require.Equal(t, "pat", got.Get("X-Forwarded-User"))

	logs := h.logs.String()
	require.Contains(t, logs, "identity headers ignored: the request lacks the proxy's shared secret")
	require.NotContains(t, logs, "CANARY")

	// With anonymous_role viewer, a forged identity is anonymous: it
	// reads, as anyone may, and changes nothing.
	o.Config.Auth.AnonymousRole = config.RoleViewer
	open := serve(t, o)
	require.Equal(t, whoami{Method: MethodAnonymous, Roles: []string{"viewer"}}, getWhoami(t, open.URL, forged()))
	code, _, body := do(t, http.MethodPost, open.URL+"/api/v1/workspaces/sandbox/runs", forged())
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Empty(t, h.triggeredNames())
}

// A custom secret header, and a rotated secret (the file is read on
// every request).
func TestProxySecretHeaderAndRotation(t *testing.T) {
	_, _, o := proxyOptions(t, "127.0.0.1/32")
	o.Config.Auth.Proxy.SecretHeader = "X-Proxy-Auth"
	ts := serve(t, o)
	hdr := proxied("olga", "", "")
	delete(hdr, config.DefaultProxySecretHeader)
	hdr["X-Proxy-Auth"] = testProxySecret
	require.Equal(t, "olga", getWhoami(t, ts.URL, hdr).Name)

	rotated := strings.Repeat("r", 40)
	require.NoError(t, os.WriteFile(o.Config.Auth.Proxy.SecretFile, []byte(rotated), 0o600))
	code, _, _ := do(t, http.MethodGet, ts.URL+"/api/v1/whoami", hdr)
	require.Equal(t, http.StatusUnauthorized, code, "the old secret stops working")
	hdr["X-Proxy-Auth"] = rotated
	require.Equal(t, "olga", getWhoami(t, ts.URL, hdr).Name)
}

// /metrics follows the role rules: open where a caller without a
// credential may read, else the viewer role or the scrape token, which
// reads nothing else.
func TestMetricsAccess(t *testing.T) {
	const scrape = "metrics-scrape-token-0123456789abcdef"
	for _, c := range []struct {
		name     string
		tune     func(*Options)
		anon     int
		logsOpen bool
	}{
		{"proxy mode", func(o *Options) {
			o.Config.Auth.Mode = config.AuthModeProxy
			o.Config.Auth.AnonymousRole = ""
			o.Config.Auth.Proxy = config.AuthProxy{TrustedNetworks: []string{"127.0.0.1/32"}}
		}, http.StatusUnauthorized, false},
		{"token mode, anonymous none", func(*Options) {}, http.StatusUnauthorized, false},
		{"token mode default", func(o *Options) { o.Config.Auth.AnonymousRole = "" }, http.StatusOK, false},
		{"anonymous viewer", func(o *Options) { o.Config.Auth.AnonymousRole = config.RoleViewer }, http.StatusOK, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _, o := roleOptions(t)
			c.tune(&o)
			if o.Config.Auth.Mode == config.AuthModeProxy {
				o.Config.Auth.Proxy.SecretFile = writeToken(t, testProxySecret)
				o.Config.Auth.Roles = []config.RoleMapping{{Role: config.RoleViewer, Users: []string{"vera"}}}
			}
			o.Config.MetricsTokenFile = writeToken(t, scrape+"\n")
			ts := serve(t, o)
			code, _, body := get(t, ts.URL+"/metrics")
			require.Equal(t, c.anon, code, body)
			if code == http.StatusUnauthorized {
				require.NotContains(t, body, "driftwatch_")
			}
			code, _, body = do(t, http.MethodGet, ts.URL+"/metrics", bearerAuth(scrape))
			require.Equal(t, http.StatusOK, code, body)
			code, _, body = do(t, http.MethodGet, ts.URL+"/metrics", bearerAuth(roleTokens[auth.RoleViewer]))
			require.Equal(t, http.StatusOK, code, body)
			if o.Config.Auth.Mode == config.AuthModeProxy {
				code, _, body = do(t, http.MethodGet, ts.URL+"/metrics", proxied("vera", "", ""))
				require.Equal(t, http.StatusOK, code, body)
				code, _, body = do(t, http.MethodGet, ts.URL+"/metrics", proxied("mallory", "", ""))
				require.Equal(t, http.StatusForbidden, code, body)
			}
			code, _, body = do(t, http.MethodGet, ts.URL+"/metrics", bearerAuth("wrong-CANARY"))
			require.Equal(t, c.anon, code, body)
			// The scrape token reads nothing but /metrics.
			for _, p := range []string{"/api/v1/workspaces", "/", "/api/v1/runs/run-net-3/logs"} {
				code, _, body := do(t, http.MethodGet, ts.URL+p, bearerAuth(scrape))
				if c.anon == http.StatusOK && (c.logsOpen || !strings.Contains(p, "/logs")) {
					require.NotEqual(t, http.StatusUnauthorized, code, "%s: %s", p, body) // open anyway
					continue
				}
				require.Equal(t, http.StatusUnauthorized, code, "%s: %s", p, body)
			}
			code, _, body = do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", bearerAuth(scrape))
			require.Equal(t, http.StatusUnauthorized, code, body)
			require.Empty(t, h.triggeredNames())
			require.NotContains(t, h.logs.String(), scrape)
		})
	}
}

func TestNewChecksProxySecret(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.Auth.Mode = config.AuthModeProxy
	o.Config.Auth.Proxy.TrustedNetworks = []string{"10.0.0.1"}
	_, err := New(o)
	require.ErrorContains(t, err, "Options.Config.Auth.Proxy.SecretFile is required in proxy mode")
	o.Config.Auth.Proxy.SecretFile = "/nonexistent/secret"
	_, err = New(o)
	require.ErrorContains(t, err, "Options.Config.Auth.Proxy.SecretFile: read token file: open /nonexistent/secret")
	o.Config.Auth.Proxy.SecretFile = ""
	o.Config.MetricsTokenFile = "/nonexistent/metrics"
	o.Config.Auth.Proxy.SecretFile = writeToken(t, testProxySecret)
	_, err = New(o)
	require.ErrorContains(t, err, "Options.Config.MetricsTokenFile: read token file: open /nonexistent/metrics")
}

// A token file that is weak (short, or readable by every user) is
// refused by the config check at start; the server, which reads it on
// every request, warns once when a rotation makes it weak.
func TestWeakTokenWarns(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	strong := strings.Repeat("s", 40)
	o.Config.TokenFile = writeToken(t, strong)
	ts := serve(t, o)
	post := func(tok string) int {
		code, _, _ := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", bearerAuth(tok))
		return code
	}
	require.Equal(t, http.StatusAccepted, post(strong))
	require.NotContains(t, h.logs.String(), "weak credential file")

	require.NoError(t, os.WriteFile(o.Config.TokenFile, []byte("short-CANARY"), 0o600))
	require.Equal(t, http.StatusAccepted, post("short-CANARY"), "still used: a rotation must not lock everyone out")
	require.Equal(t, http.StatusAccepted, post("short-CANARY"))
	logs := h.logs.String()
	require.Equal(t, 1, strings.Count(logs, "weak credential file"), logs)
	require.Contains(t, logs, "holds 12 characters, fewer than 32")
	require.Contains(t, logs, "file="+o.Config.TokenFile)

	require.NoError(t, os.WriteFile(o.Config.TokenFile, []byte(strong), 0o600))
	require.NoError(t, os.Chmod(o.Config.TokenFile, 0o644))
	require.Equal(t, http.StatusAccepted, post(strong))
	require.Contains(t, h.logs.String(), "is readable by every user (mode 0644)")
	require.NotContains(t, h.logs.String(), "CANARY")
	require.NotContains(t, h.logs.String(), strong)
}

// GET /api/v1/whoami says what a caller without a credential may do:
// the viewer role under anonymous_role viewer, none under none.
func TestWhoamiAnonymousViewer(t *testing.T) {
	_, _, o := roleOptions(t)
	o.Config.Auth.AnonymousRole = config.RoleViewer
	ts := serve(t, o)
	require.Equal(t, whoami{Method: MethodAnonymous, Roles: []string{"viewer"}}, getWhoami(t, ts.URL, nil))
	require.Equal(t, whoami{Name: "operator-bot", Method: "token:operator-bot", Roles: []string{"operator"}},
		getWhoami(t, ts.URL, bearerAuth(roleTokens[auth.RoleOperator])))

	o.Config.Auth.AnonymousRole = ""
	o.Config.OpenReads = true
	ts = serve(t, o)
	require.Equal(t, whoami{Method: MethodAnonymous, Roles: []string{"viewer"}}, getWhoami(t, ts.URL, nil))
}

// A route that never reads its body (run now, cancel, pause) refuses a
// chunked body past the limit as one that declares its length: 413, and
// nothing reaches the daemon.
func TestChunkedBodyOnRouteThatIgnoresIt(t *testing.T) {
	h, rem, o := roleOptions(t)
	ts := serve(t, o)
	for _, path := range []string{"/api/v1/workspaces/sandbox/runs", "/api/v1/runs/run-net-4/cancel", "/api/v1/remediation/pause"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+path,
			strings.NewReader(strings.Repeat("x", 10<<20)))
		require.NoError(t, err)
		req.ContentLength = -1 // chunked
		req.Header.Set("Authorization", "Bearer "+roleTokens[auth.RoleAdmin])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body struct{ Error string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, path)
		require.Equal(t, "body is larger than 65536 bytes", body.Error)
	}
	require.Empty(t, h.triggeredNames())
	require.Empty(t, rem.decisions())
	// A small chunked body is fine.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", strings.NewReader("{}"))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+roleTokens[auth.RoleAdmin])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

// countingStats is a StatsReader that counts and can hold its reads.
type countingStats struct {
	store.Store
	reads atomic.Int64
	hold  chan struct{} // nil: no hold
	in    chan struct{}
}

func (c *countingStats) StatsRuns(ctx context.Context, q store.StatsQuery, fn func(store.StatsRun) error) error {
	c.reads.Add(1)
	if c.hold != nil {
		c.in <- struct{}{}
		<-c.hold
	}
	return c.Store.(store.StatsReader).StatsRuns(ctx, q, fn)
}

func (c *countingStats) DriftedTypes(ctx context.Context, runs []string) ([]store.TypeCount, error) {
	return c.Store.(store.StatsReader).DriftedTypes(ctx, runs)
}

func (c *countingStats) ScanFound(ctx context.Context, runs []string) ([]store.FoundCount, error) {
	return c.Store.(store.StatsReader).ScanFound(ctx, runs)
}

func (c *countingStats) UnmanagedTypes(ctx context.Context, runs []string) ([]store.TypeCount, error) {
	return c.Store.(store.StatsReader).UnmanagedTypes(ctx, runs)
}

// GET /api/v1/stats reads the store once per filter a minute, and at
// most view.MaxStatsConcurrent at once: one more answers 503 with
// Retry-After.
func TestStatsCachedAndCapped(t *testing.T) {
	o := trendsHarness(t)
	now := testNow
	var mu sync.Mutex
	o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cs := &countingStats{Store: o.Store}
	o.Store = cs
	base := serve(t, o).URL

	code, _, first := get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod")
	require.Equal(t, http.StatusOK, code, first)
	code, _, again := get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, first, again)
	require.EqualValues(t, 1, cs.reads.Load(), "the same query within a minute is served from the cache")
	code, _, _ = get(t, base+"/trends?since=3d&label=env%3Dprod")
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 1, cs.reads.Load(), "the page shares the cache")
	code, _, _ = get(t, base+"/api/v1/stats?since=3d")
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 2, cs.reads.Load(), "another query is computed")
	mu.Lock()
	now = now.Add(view.StatsCacheTTL)
	mu.Unlock()
	code, _, _ = get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod")
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 3, cs.reads.Load(), "a minute later it is computed again")

	// The cap: view.MaxStatsConcurrent reads held, one more is refused.
	cs.hold, cs.in = make(chan struct{}), make(chan struct{}, view.MaxStatsConcurrent)
	var wg sync.WaitGroup
	codes := make([]int, view.MaxStatsConcurrent)
	for i := range view.MaxStatsConcurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/api/v1/stats?since="+[]string{"1d", "2d", "4d", "5d"}[i], nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	for range view.MaxStatsConcurrent {
		<-cs.in
	}
	code, hdr, body := get(t, base+"/api/v1/stats?since=6d")
	requireJSON(t, http.StatusServiceUnavailable, `{"error": "too many statistics are being computed: try again in a few seconds"}`, code, hdr, body)
	require.Equal(t, "5", hdr.Get("Retry-After"))
	code, _, _ = get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod")
	require.Equal(t, http.StatusOK, code, "a cached answer needs no slot")
	close(cs.hold)
	wg.Wait()
	for _, c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
}
