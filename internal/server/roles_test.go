package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The tokens of the role tests, one per role; like testToken none may
// show in a response or a log line.
var roleTokens = map[auth.Role]string{
	auth.RoleViewer:   "viewer-CANARY-token",
	auth.RoleOperator: "operator-CANARY-token",
	auth.RoleApprover: "approver-CANARY-token",
	auth.RoleAdmin:    "admin-CANARY-token",
}

// recordingRemediations is the remediation fixture whose decisions
// succeed and record who the server says decided (IdentityFrom), as the
// daemon records it.
type recordingRemediations struct {
	*fakeRemediations
	mu     sync.Mutex
	actors []string
}

func (f *recordingRemediations) record(ctx context.Context, what, id string) (store.Remediation, error) {
	who, _ := IdentityFrom(ctx)
	f.mu.Lock()
	f.actors = append(f.actors, what+" "+id+" by "+who.Actor())
	f.mu.Unlock()
	return f.Get(ctx, id)
}

func (f *recordingRemediations) Approve(ctx context.Context, id, _ string) (store.Remediation, error) {
	return f.record(ctx, "approve", id)
}

func (f *recordingRemediations) Reject(ctx context.Context, id string) (store.Remediation, error) {
	return f.record(ctx, "reject", id)
}

func (f *recordingRemediations) SetPaused(context.Context, bool) error { return nil }

func (f *recordingRemediations) decisions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.actors...)
}

// fullControl is a Control with every optional side: silences (the
// harness) and remediation.
type fullControl struct {
	*harness
	RemediationControl
}

// selfPattern is the route of Options.Handlers in these tests: it
// answers 299 to anyone, as a handler that authenticates itself would
// after its own check.
const selfPattern = "POST /hooks/test"

// roleOptions is a server with every optional route (remediation,
// silences, a self-authenticated handler), one named token per role and,
// unless tuned, anonymous_role none.
func roleOptions(t *testing.T) (*harness, *recordingRemediations, Options) {
	t.Helper()
	h := newHarness(t)
	silenceFixture(h)
	rem := &recordingRemediations{fakeRemediations: remediationFixture(h)}
	o := h.options()
	o.Control = fullControl{h, rem}
	o.Handlers = map[string]http.Handler{selfPattern: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(299)
	})}
	o.Config.Auth.AnonymousRole = config.RoleNone
	for _, role := range []auth.Role{auth.RoleViewer, auth.RoleOperator, auth.RoleApprover, auth.RoleAdmin} {
		o.Config.Auth.Tokens = append(o.Config.Auth.Tokens, config.AuthToken{
			Name: string(role) + "-bot", Role: string(role), File: writeToken(t, roleTokens[role]+"\n"),
		})
	}
	return h, rem, o
}

// concrete turns a route pattern into a method and a path that reaches
// it with fixture values.
func concrete(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	id := "run-net-3"
	switch {
	case strings.Contains(path, "/remediations/"):
		id = "rem-pend"
	case strings.Contains(path, "/silences/"):
		id = "sil-db"
	}
	path = strings.NewReplacer("{name}", "prod-network", "{id}", id, "{$}", "").Replace(path)
	return method, path
}

// verdict is what a cell of the table expects.
type verdict string

const (
	unauthenticated verdict = "401"
	forbidden       verdict = "403"
	served          verdict = "served" // neither 401 nor 403: the handler answered
)

func verdictOf(code int) verdict {
	switch code {
	case http.StatusUnauthorized:
		return unauthenticated
	case http.StatusForbidden:
		return forbidden
	}
	return served
}

// caller is one column of the table: the headers it sends and what it
// should get from a route with a rule.
type caller struct {
	name   string
	header map[string]string
	want   func(access) verdict
}

// tokenCaller holds a token with one role.
func tokenCaller(role auth.Role) caller {
	return caller{string(role), bearerAuth(roleTokens[role]), func(a access) verdict {
		if role.Grants(a.need) {
			return served
		}
		return forbidden
	}}
}

func roleCallers(anonymous func(access) verdict) []caller {
	cs := []caller{{"anonymous", nil, anonymous}, {"wrong token", bearerAuth("wrong-CANARY"), func(a access) verdict {
		if anonymous(a) == served {
			return served // an invalid credential does not close an open read
		}
		return unauthenticated
	}}}
	for _, r := range []auth.Role{auth.RoleViewer, auth.RoleOperator, auth.RoleApprover, auth.RoleAdmin} {
		cs = append(cs, tokenCaller(r))
	}
	return cs
}

// The route table: every registered route has a rule, and for every
// caller (anonymous, a wrong token, a token of each role) a real request
// gets what the rule says: 401 without a credential, 403 with a role too
// low, the handler's answer otherwise. The table comes from the router,
// so a new route is checked as soon as it is registered.
func TestRouteTable(t *testing.T) {
	for _, mode := range []struct {
		name string
		tune func(*Options)
		anon func(access) verdict
	}{
		{"anonymous none", func(*Options) {}, func(access) verdict { return unauthenticated }},
		{"token mode default", func(o *Options) { o.Config.Auth.AnonymousRole = "" }, func(a access) verdict {
			if a.need == auth.RoleViewer && !a.logs {
				return served // the status pages and the read API, as always
			}
			return unauthenticated
		}},
		{"anonymous viewer", func(o *Options) { o.Config.Auth.AnonymousRole = config.RoleViewer }, func(a access) verdict {
			if a.need == auth.RoleViewer {
				return served
			}
			return unauthenticated
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			h, _, o := roleOptions(t)
			mode.tune(&o)
			ts := serve(t, o)
			s, err := New(o)
			require.NoError(t, err)
			var public, self []string
			for _, rt := range s.router.routes {
				method, path := concrete(rt.pattern)
				switch rt.access.kind {
				case accessPublic:
					public = append(public, rt.pattern)
				case accessSelf:
					self = append(self, rt.pattern)
				case accessRole:
					require.True(t, rt.access.need.Valid(), "%s: %s", rt.pattern, rt.access)
				default:
					t.Fatalf("route %s has no access rule", rt.pattern)
				}
				for _, c := range roleCallers(mode.anon) {
					code, hdr, body := send(t, method, ts.URL+path, c.header, "")
					requireSecurityHeaders(t, hdr, rt.pattern)
					switch rt.access.kind {
					case accessPublic:
						require.Equal(t, served, verdictOf(code), "%s as %s: %s", rt.pattern, c.name, body)
					case accessSelf:
						require.Equal(t, 299, code, "%s as %s: %s", rt.pattern, c.name, body)
					case accessRole:
						want := c.want(rt.access)
						require.Equal(t, want, verdictOf(code), "%s (%s) as %s: %d %s", rt.pattern, rt.access, c.name, code, body)
						if want == unauthenticated {
							require.NotEmpty(t, hdr.Get("WWW-Authenticate"), "%s as %s", rt.pattern, c.name)
						}
					}
				}
			}
			// What is open to anyone or checks its own credential is a
			// deliberate, short list.
			require.ElementsMatch(t, []string{"GET /healthz", "GET /readyz"}, public)
			require.Equal(t, []string{selfPattern}, self)
			logs := h.logs.String()
			for _, tok := range roleTokens {
				require.NotContains(t, logs, tok)
			}
			require.NotContains(t, logs, "CANARY")
		})
	}
}

// The rules the issue asks for: viewers read, operators run, cancel and
// silence, approvers decide remediations, admins hold the kill switch.
func TestRouteRules(t *testing.T) {
	_, _, o := roleOptions(t)
	s, err := New(o)
	require.NoError(t, err)
	got := map[string]string{}
	for _, rt := range s.router.routes {
		got[rt.pattern] = rt.access.String()
	}
	for pattern, want := range map[string]string{
		"GET /api/v1/workspaces":                 "viewer",
		"GET /api/v1/runs/{id}/logs":             "viewer (logs)",
		"GET /runs/{id}":                         "viewer (logs)",
		"GET /{$}":                               "viewer",
		"POST /api/v1/workspaces/{name}/runs":    "operator",
		"POST /api/v1/runs/{id}/cancel":          "operator",
		"POST /api/v1/workspaces/{name}/adopt":   "operator",
		"POST /api/v1/silences":                  "operator",
		"DELETE /api/v1/silences/{id}":           "operator",
		"POST /api/v1/remediations/{id}/approve": "approver",
		"POST /api/v1/remediations/{id}/reject":  "approver",
		"POST /api/v1/remediation/pause":         "admin",
		"POST /api/v1/remediation/resume":        "admin",
		"GET /metrics":                           "viewer or the metrics token",
		"GET /healthz":                           "public",
		selfPattern:                              "self-authenticated",
	} {
		require.Equal(t, want, got[pattern], pattern)
	}
}

func requireSecurityHeaders(t *testing.T, h http.Header, what string) {
	t.Helper()
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), what)
	require.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'", what)
	require.Equal(t, "no-referrer", h.Get("Referrer-Policy"), what)
}

// Every mutating route bounds its body: one declared larger than the
// limit is refused (413) before the handler runs, and a chunked one
// when a handler reads past it; nothing reaches the daemon.
func TestBodyLimits(t *testing.T) {
	h, rem, o := roleOptions(t)
	ts := serve(t, o)
	s, err := New(o)
	require.NoError(t, err)
	big := `{"comment": "` + strings.Repeat("x", respond.MaxBody) + `"}`
	n := 0
	for _, rt := range s.router.routes {
		method, path := concrete(rt.pattern)
		if rt.access.kind != accessRole || auth.SafeMethod(method) {
			continue
		}
		n++
		code, hdr, body := send(t, method, ts.URL+path, bearerAuth(roleTokens[auth.RoleAdmin]), big)
		require.Equal(t, http.StatusRequestEntityTooLarge, code, "%s: %s", rt.pattern, body)
		requireSecurityHeaders(t, hdr, rt.pattern)
		require.Contains(t, body, fmt.Sprintf("body is larger than %d bytes", respond.MaxBody))
	}
	require.Equal(t, 10, n, "the mutating routes")
	// A chunked body has no length to refuse up front: the handlers that
	// read one stop at the limit.
	for _, path := range []string{"/api/v1/silences", "/api/v1/remediations/rem-pend/approve"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+path, strings.NewReader(big))
		require.NoError(t, err)
		req.ContentLength = -1 // chunked
		req.Header.Set("Authorization", "Bearer "+roleTokens[auth.RoleAdmin])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, path)
	}
	added, expired := h.silenceCalls()
	require.Empty(t, added)
	require.Empty(t, expired)
	require.Empty(t, h.triggeredNames())
	require.Empty(t, rem.decisions())
}

// Responses the route table does not reach carry the headers too: an
// unknown path, a refused Host.
func TestSecurityHeadersEverywhere(t *testing.T) {
	_, _, o := roleOptions(t)
	ts := serve(t, o)
	for _, c := range []struct {
		host, path string
		code       int
	}{
		{"", "/nope", http.StatusNotFound},
		{"evil.example", "/api/v1/workspaces", http.StatusMisdirectedRequest},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+c.path, nil)
		require.NoError(t, err)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.code, resp.StatusCode, c.path)
		requireSecurityHeaders(t, resp.Header, c.path)
	}
	// Pages keep their own strict policy, which forbids framing too.
	code, hdr, body := do(t, http.MethodGet, ts.URL+"/", bearerAuth(roleTokens[auth.RoleViewer]))
	require.Equal(t, http.StatusOK, code, body)
	csp := hdr.Get("Content-Security-Policy")
	require.Contains(t, csp, "style-src 'sha256-")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-inline")
}
