package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// memAudit is an AuditRecorder that keeps the entries; err, when set,
// fails every recording.
type memAudit struct {
	mu      sync.Mutex
	entries []store.AuditEntry
	err     error
}

func (m *memAudit) RecordAudit(_ context.Context, e store.AuditEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.entries = append(m.entries, e)
	return nil
}

// take returns the entries recorded since the last take.
func (m *memAudit) take() []store.AuditEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.entries
	m.entries = nil
	return out
}

// auditTarget is the target a request to the concrete path of pattern
// names: the path value the action's table entry names.
func auditTarget(t *testing.T, pattern string) string {
	t.Helper()
	a, ok := auditActionFor(pattern)
	require.True(t, ok, pattern)
	if a.target == "" {
		return ""
	}
	_, p, _ := strings.Cut(pattern, " ")
	_, c := concrete(pattern)
	ps, cs := strings.Split(p, "/"), strings.Split(c, "/")
	require.Len(t, cs, len(ps), pattern)
	for i, seg := range ps {
		if seg == "{"+a.target+"}" {
			return cs[i]
		}
	}
	t.Fatalf("%s: no path value %q", pattern, a.target)
	return ""
}

// Every mutating route is in the action table, and every request to one,
// by any caller, leaves exactly one entry: who (the token's identity, or
// anonymous), with which roles, the action, its target, the status and
// whether it was done, refused or failed. Refusals say why. The table
// comes from the router, so a new mutating route is checked (and needs
// an action name) as soon as it is registered.
func TestAuditEveryMutatingRoute(t *testing.T) {
	h, _, o := roleOptions(t)
	rec := &memAudit{}
	o.Audit = rec
	ts := serve(t, o)
	s, err := New(o)
	require.NoError(t, err)
	var audited []string
	names := map[string]bool{}
	for _, rt := range s.router.routes {
		method, path := concrete(rt.pattern)
		if rt.access.kind != accessRole || auth.SafeMethod(method) {
			require.Nil(t, rt.access.audit, "%s records nothing", rt.pattern)
			continue
		}
		act, ok := auditActionFor(rt.pattern)
		require.True(t, ok, "mutating route %s has no action name in auditActionFor", rt.pattern)
		require.NotNil(t, rt.access.audit, rt.pattern)
		require.Equal(t, act, *rt.access.audit, rt.pattern)
		require.False(t, names[act.name], "action %s named twice", act.name)
		names[act.name] = true
		audited = append(audited, rt.pattern)
		target := auditTarget(t, rt.pattern)
		for _, c := range roleCallers(func(access) verdict { return unauthenticated }) {
			code, _, body := send(t, method, ts.URL+path, c.header, "{}")
			es := rec.take()
			require.Len(t, es, 1, "%s as %s: %d %s", rt.pattern, c.name, code, body)
			e := es[0]
			require.Equal(t, act.name, e.Action, rt.pattern)
			if c.name == "anonymous" || c.name == "wrong token" {
				require.Empty(t, e.Target, "%s as %s: a refused anonymous caller's target is not kept", rt.pattern, c.name)
			} else {
				require.Equal(t, target, e.Target, "%s as %s", rt.pattern, c.name)
			}
			require.Equal(t, code, e.Status, "%s as %s", rt.pattern, c.name)
			require.Equal(t, store.AuditSourceAPI, e.Source)
			require.True(t, e.At.Equal(testNow), "the server's clock")
			switch want := c.want(rt.access); {
			case c.name == "anonymous":
				require.Equal(t, unauthenticated, want)
				require.Equal(t, store.AuditEntry{At: e.At, Actor: "anonymous", Method: "anonymous", Action: act.name,
					Result: store.AuditDenied, Status: http.StatusUnauthorized, Detail: "no credential", Source: "api",
					Anonymous: true, Peer: "127.0.0.1"}, e)
			case c.name == "wrong token":
				require.Equal(t, store.AuditEntry{At: e.At, Actor: "anonymous", Method: "anonymous", Action: act.name,
					Result: store.AuditDenied, Status: http.StatusUnauthorized, Detail: "invalid credential", Source: "api",
					Anonymous: true, Peer: "127.0.0.1"}, e)
			case want == forbidden:
				require.Equal(t, store.AuditEntry{At: e.At, Actor: "token:" + c.name + "-bot", Method: "token:" + c.name + "-bot",
					Roles: []string{c.name}, Action: act.name, Target: target, Result: store.AuditDenied, Status: http.StatusForbidden,
					Detail: "needs the " + string(rt.access.need) + " role", Source: "api"}, e)
			default:
				require.Equal(t, "token:"+c.name+"-bot", e.Actor)
				require.Equal(t, []string{c.name}, e.Roles)
				if code < 400 {
					require.Equal(t, store.AuditOK, e.Result, "%s as %s", rt.pattern, c.name)
					require.Empty(t, e.Detail)
				} else {
					require.Equal(t, store.AuditError, e.Result, "%s as %s: %d %s", rt.pattern, c.name, code, body)
					require.Equal(t, strings.ToLower(http.StatusText(code)), e.Detail)
				}
			}
			for _, tok := range roleTokens {
				require.NotContains(t, fmt.Sprintf("%+v", e), tok)
			}
		}
	}
	require.Len(t, audited, 10, "the mutating routes")
	// The allowed calls did reach the daemon: the entries are of real
	// actions.
	require.Contains(t, h.triggeredNames(), "prod-network")
	require.NotContains(t, h.logs.String(), "CANARY")
}

// Allowed calls are recorded as done: a run queued by an operator, a
// remediation approved by an approver, the kill switch pulled by an
// admin.
func TestAuditRecordsDoneActions(t *testing.T) {
	_, rem, o := roleOptions(t)
	rec := &memAudit{}
	o.Audit = rec
	ts := serve(t, o)
	for _, c := range []struct {
		role           auth.Role
		method, path   string
		action, target string
	}{
		{auth.RoleOperator, http.MethodPost, "/api/v1/workspaces/prod-network/runs", "run.trigger", "prod-network"},
		{auth.RoleApprover, http.MethodPost, "/api/v1/remediations/rem-pend/approve", "remediation.approve", "rem-pend"},
		{auth.RoleAdmin, http.MethodPost, "/api/v1/remediation/pause", "remediation.pause", ""},
		{auth.RoleOperator, http.MethodDelete, "/api/v1/silences/sil-db", "silence.expire", "sil-db"},
	} {
		code, _, body := send(t, c.method, ts.URL+c.path, bearerAuth(roleTokens[c.role]), "{}")
		require.Less(t, code, 300, "%s: %s", c.path, body)
		es := rec.take()
		require.Len(t, es, 1)
		require.Equal(t, store.AuditEntry{At: testNow, Actor: "token:" + string(c.role) + "-bot", Method: "token:" + string(c.role) + "-bot",
			Roles: []string{string(c.role)}, Action: c.action, Target: c.target, Result: store.AuditOK, Status: code, Source: "api"}, es[0])
	}
	require.Equal(t, []string{"approve rem-pend by token:approver-bot"}, rem.decisions())
}

// Reads record nothing, whoever asks.
func TestAuditNothingForReads(t *testing.T) {
	_, _, o := roleOptions(t)
	rec := &memAudit{}
	o.Audit = rec
	ts := serve(t, o)
	s, err := New(o)
	require.NoError(t, err)
	n := 0
	for _, rt := range s.router.routes {
		method, path := concrete(rt.pattern)
		if !auth.SafeMethod(method) || rt.pattern == "GET /metrics" {
			continue
		}
		n++
		for _, c := range roleCallers(func(access) verdict { return unauthenticated }) {
			do(t, method, ts.URL+path, c.header)
		}
	}
	require.Greater(t, n, 10)
	require.Empty(t, rec.take())
}

// A body too large is refused and recorded as denied; so are a proxy
// sign-in's requests without their CSRF token or from another site, and
// identity headers from an untrusted peer. A page's request (with its
// CSRF token) is recorded as from the page, under the person's name.
func TestAuditRefusals(t *testing.T) {
	t.Run("body too large", func(t *testing.T) {
		_, _, o := roleOptions(t)
		rec := &memAudit{}
		o.Audit = rec
		ts := serve(t, o)
		big := `{"comment": "` + strings.Repeat("x", respond.MaxBody) + `"}`
		code, _, _ := send(t, http.MethodPost, ts.URL+"/api/v1/silences", bearerAuth(roleTokens[auth.RoleAdmin]), big)
		require.Equal(t, http.StatusRequestEntityTooLarge, code)
		require.Equal(t, []store.AuditEntry{{At: testNow, Actor: "token:admin-bot", Method: "token:admin-bot", Roles: []string{"admin"},
			Action: "silence.add", Result: store.AuditDenied, Status: http.StatusRequestEntityTooLarge,
			Detail: fmt.Sprintf("body larger than %d bytes", respond.MaxBody), Source: "api"}}, rec.take())
	})
	t.Run("proxy", func(t *testing.T) {
		_, _, o := proxyOptions(t, "127.0.0.1/32")
		rec := &memAudit{}
		o.Audit = rec
		ts := serve(t, o)
		olga := proxied("olga", "", "")
		tok := getWhoami(t, ts.URL, olga).CSRFToken
		const trigger = "/api/v1/workspaces/sandbox/runs"
		with := func(extra map[string]string) map[string]string {
			out := map[string]string{"X-Forwarded-User": "olga", "X-Driftwatch-Proxy-Secret": testProxySecret}
			for k, v := range extra {
				out[k] = v
			}
			return out
		}
		for _, c := range []struct {
			name   string
			hdr    map[string]string
			code   int
			result string
			detail string
		}{
			{"no csrf token", with(nil), http.StatusForbidden, store.AuditDenied, "cross-site request or missing CSRF token"},
			{"cross-site", with(map[string]string{"X-CSRF-Token": tok, "Sec-Fetch-Site": "cross-site"}), http.StatusForbidden,
				store.AuditDenied, "cross-site request or missing CSRF token"},
			{"from the page", with(map[string]string{"X-CSRF-Token": tok, "Sec-Fetch-Site": "same-origin"}), http.StatusAccepted, store.AuditOK, ""},
		} {
			code, _, body := send(t, http.MethodPost, ts.URL+trigger, c.hdr, "")
			require.Equal(t, c.code, code, "%s: %s", c.name, body)
			es := rec.take()
			require.Equal(t, []store.AuditEntry{{At: testNow, Actor: "olga", Method: "proxy", Roles: []string{"operator"},
				Action: "run.trigger", Target: "sandbox", Result: c.result, Status: c.code, Detail: c.detail, Source: "page"}}, es, c.name)
			require.NotContains(t, fmt.Sprintf("%+v", es), tok, "the CSRF token is not recorded")
		}
	})
	t.Run("untrusted proxy", func(t *testing.T) {
		_, _, o := proxyOptions(t, "10.0.0.0/8")
		rec := &memAudit{}
		o.Audit = rec
		ts := serve(t, o)
		code, _, _ := send(t, http.MethodPost, ts.URL+"/api/v1/remediation/pause", proxied("pat", "", "platform"), "")
		require.Equal(t, http.StatusForbidden, code)
		es := rec.take()
		require.Len(t, es, 1)
		require.Equal(t, store.AuditDenied, es[0].Result)
		require.Equal(t, "identity headers from an untrusted peer", es[0].Detail)
		require.Equal(t, "remediation.pause", es[0].Action)
		require.Empty(t, es[0].Roles, "no role from headers that are not believed")
	})
}

// A recording that fails is logged; the request is answered as ever.
func TestAuditFailureDoesNotFailTheRequest(t *testing.T) {
	h, _, o := roleOptions(t)
	o.Audit = &memAudit{err: errors.New("disk full")}
	ts := serve(t, o)
	code, _, body := send(t, http.MethodPost, ts.URL+"/api/v1/workspaces/prod-network/runs", bearerAuth(roleTokens[auth.RoleOperator]), "")
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, []string{"prod-network"}, h.triggeredNames())
	require.Contains(t, h.logs.String(), `msg="record audit entry" action=run.trigger target=prod-network actor=token:operator-bot result=ok err="disk full"`)
}

// auditStore is the fixture's store with a real audit log beside it.
type auditStore struct {
	*fakeStore
	store.AuditStore
}

// serveAudit serves the full server (its mutating routes record into a
// real SQLite audit log) and, beside it, a second one over the same log
// to read it through.
func serveAudit(t *testing.T, o Options) (full, audit string, log *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	o.Store = auditStore{o.Store.(*fakeStore), st}
	o.Audit = st
	return serve(t, o).URL, serve(t, o).URL, st
}

type apiAuditAnswer struct {
	Query   map[string]any `json:"query"`
	Entries []struct {
		ID                                            int64
		At                                            time.Time
		Actor, Method, Action, Target, Result, Detail string
		Roles                                         []string
		Status                                        int
		Source                                        string
		Count                                         int
		Anonymous                                     bool
		Peer                                          string
	} `json:"entries"`
}

func getAudit(t *testing.T, url string, hdr map[string]string) apiAuditAnswer {
	t.Helper()
	code, h, body := do(t, http.MethodGet, url, hdr)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "application/json", h.Get("Content-Type"))
	var a apiAuditAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	return a
}

func (a apiAuditAnswer) lines() []string {
	out := []string{}
	for _, e := range a.Entries {
		out = append(out, fmt.Sprintf("%s %s %s %s %d", e.Actor, e.Action, e.Target, e.Result, e.Status))
	}
	return out
}

// GET /api/v1/audit lists what the mutating routes recorded, newest
// first, filtered by since, actor, action and target, at most limit;
// viewers may read it.
func TestAPIAudit(t *testing.T) {
	_, _, o := roleOptions(t)
	clock := testNow
	var mu sync.Mutex
	o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	full, base, _ := serveAudit(t, o)
	at := func(d time.Duration) { mu.Lock(); clock = testNow.Add(d); mu.Unlock() }

	at(-72 * time.Hour)
	send(t, http.MethodPost, full+"/api/v1/workspaces/prod-network/runs", bearerAuth(roleTokens[auth.RoleOperator]), "")
	at(-time.Hour)
	send(t, http.MethodPost, full+"/api/v1/runs/run-net-3/cancel", bearerAuth(roleTokens[auth.RoleViewer]), "")
	at(0)
	send(t, http.MethodPost, full+"/api/v1/remediations/rem-pend/approve", bearerAuth(roleTokens[auth.RoleApprover]), "{}")
	send(t, http.MethodPost, full+"/api/v1/workspaces/staging-web/runs", nil, "")

	viewer := bearerAuth(roleTokens[auth.RoleViewer])
	all := getAudit(t, base+"/api/v1/audit", viewer)
	require.Equal(t, []string{
		"anonymous run.trigger  denied 401",
		"token:approver-bot remediation.approve rem-pend ok 200",
		"token:viewer-bot run.cancel run-net-3 denied 403",
		"token:operator-bot run.trigger prod-network ok 202",
	}, all.lines())
	require.Equal(t, map[string]any{"limit": float64(100)}, all.Query)
	e := all.Entries[2]
	require.Equal(t, "needs the operator role", e.Detail)
	require.Equal(t, []string{"viewer"}, e.Roles)
	require.True(t, e.At.Equal(testNow.Add(-time.Hour)))
	require.Equal(t, "api", e.Source)

	for q, want := range map[string][]string{
		"since=2d":                    all.lines()[:3],
		"since=2h":                    all.lines()[:3],
		"since=30m":                   nil,
		"actor=token:viewer-bot":      {"token:viewer-bot run.cancel run-net-3 denied 403"},
		"action=run.trigger":          {all.lines()[0], all.lines()[3]},
		"target=rem-pend":             {all.lines()[1]},
		"action=run.trigger&limit=1":  {all.lines()[0]},
		"actor=anonymous&target=nope": {},
	} {
		if want == nil {
			code, _, body := do(t, http.MethodGet, base+"/api/v1/audit?"+q, viewer)
			require.Equal(t, http.StatusBadRequest, code, body)
			continue
		}
		require.Equal(t, want, getAudit(t, base+"/api/v1/audit?"+q, viewer).lines(), q)
	}
	// The filter is echoed as understood.
	require.Equal(t, map[string]any{"since": "2d", "actor": "token:viewer-bot", "limit": float64(5)},
		getAudit(t, base+"/api/v1/audit?since=2d&actor=token:viewer-bot&limit=5", viewer).Query)

	// Reading it needs a credential like every read here.
	code, _, _ := do(t, http.MethodGet, base+"/api/v1/audit", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

// A bad query answers 400 naming the parameter; a store without an audit
// log, 501.
func TestAPIAuditErrors(t *testing.T) {
	_, _, o := roleOptions(t)
	_, base, _ := serveAudit(t, o)
	viewer := bearerAuth(roleTokens[auth.RoleViewer])
	for q, want := range map[string]string{
		"since=3w":          "query parameter since",
		"since=0d":          "query parameter since",
		"limit=0":           `query parameter limit: "0" is not a whole number from 1 to 1000`,
		"limit=1001":        "query parameter limit",
		"limit=ten":         "query parameter limit",
		"actor=":            "query parameter actor: empty",
		"action=a&action=b": "query parameter action: given 2 times",
		"who=alice":         `unknown query parameter "who": want since, actor, action, target or limit`,
	} {
		code, h, body := do(t, http.MethodGet, base+"/api/v1/audit?"+q, viewer)
		require.Equal(t, http.StatusBadRequest, code, q)
		require.Equal(t, "application/json", h.Get("Content-Type"))
		var e struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		require.Contains(t, e.Error, want, q)
	}

	// The fixture's own store keeps no audit log.
	ts := serve(t, o)
	code, _, body := do(t, http.MethodGet, ts.URL+"/api/v1/audit", viewer)
	require.Equal(t, http.StatusNotImplemented, code)
	require.Contains(t, body, "the audit log is not available")
	code, _, body = do(t, http.MethodGet, ts.URL+"/audit", viewer)
	require.Equal(t, http.StatusNotImplemented, code)
	require.Contains(t, body, "Audit log unavailable")
}

// The /audit page shows the entries as a table (when, who, role, action,
// target, result), escapes what callers chose (a workspace name in a
// path), links each actor, action and target to a filter, and keeps the
// pages' CSP: no script, no inline style but the stylesheet.
func TestAuditPage(t *testing.T) {
	_, _, o := roleOptions(t)
	full, base, _ := serveAudit(t, o)
	send(t, http.MethodPost, full+"/api/v1/workspaces/prod-network/runs", bearerAuth(roleTokens[auth.RoleOperator]), "")
	send(t, http.MethodPost, full+"/api/v1/workspaces/%3Cb%3Ex/runs", bearerAuth(roleTokens[auth.RoleViewer]), "")

	viewer := bearerAuth(roleTokens[auth.RoleViewer])
	code, h, body := do(t, http.MethodGet, base+"/audit", viewer)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	csp := h.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.NotContains(t, body, "<script")
	require.NotContains(t, body, "<b>x", "a name a caller chose is escaped")
	require.Contains(t, body, "&lt;b&gt;x")
	for _, want := range []string{
		"<th>When</th><th>Who</th><th>Role</th><th>Action</th><th>Target</th><th>Result</th>",
		`<a href="/audit?actor=token%3Aoperator-bot" title="Only token:operator-bot">token:operator-bot</a>`,
		`<a href="/audit?action=run.trigger" title="Only run.trigger">run.trigger</a>`,
		`<a href="/audit?target=prod-network" title="Only prod-network">prod-network</a>`,
		`<span class="badge s-clean">ok</span> <span class="muted small">202</span>`,
		`<span class="badge s-forbidden">denied</span> <span class="muted small">403</span> <span class="small">needs the operator role</span>`,
		`<a href="/api/v1/audit">/api/v1/audit</a>`,
	} {
		require.Contains(t, body, want)
	}
	require.Less(t, strings.Index(body, "&lt;b&gt;x"), strings.Index(body, "prod-network</a>"), "newest first")

	code, _, body = do(t, http.MethodGet, base+"/audit?target=prod-network&since=7d", viewer)
	require.Equal(t, http.StatusOK, code, body)
	require.NotContains(t, body, "&lt;b&gt;x")
	require.Contains(t, body, `<a class="chip" href="/audit?since=7d" title="Remove this filter">target prod-network ✕</a>`)
	require.Contains(t, body, `<strong class="chip current" aria-current="true">7 days</strong>`)

	code, _, body = do(t, http.MethodGet, base+"/audit?limit=x", viewer)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "query parameter limit")
	code, _, _ = do(t, http.MethodGet, base+"/audit", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

// The guard's answers are never recorded as done, whatever their status;
// the handler's are by their status.
func TestAuditResult(t *testing.T) {
	op := access{kind: accessRole, need: auth.RoleOperator}
	viewer := Identity{Method: "token:v", Roles: []auth.Role{auth.RoleViewer}}
	operator := Identity{Method: "token:o", Roles: []auth.Role{auth.RoleOperator}}
	for _, c := range []struct {
		id             Identity
		out            auth.Outcome
		reached        bool
		status         int
		result, detail string
	}{
		{operator, auth.OutcomeOK, true, http.StatusAccepted, store.AuditOK, ""},
		{operator, auth.OutcomeOK, true, http.StatusConflict, store.AuditError, "conflict"},
		{operator, auth.OutcomeOK, true, http.StatusInternalServerError, store.AuditError, "internal server error"},
		{operator, auth.OutcomeOK, true, http.StatusForbidden, store.AuditDenied, "refused by the handler"},
		{operator, auth.OutcomeOK, true, http.StatusRequestEntityTooLarge, store.AuditDenied, "body larger than 65536 bytes"},
		{operator, auth.OutcomeOK, false, http.StatusRequestEntityTooLarge, store.AuditDenied, "body larger than 65536 bytes"},
		{operator, auth.OutcomeOK, false, http.StatusForbidden, store.AuditDenied, "cross-site request or missing CSRF token"},
		{viewer, auth.OutcomeOK, false, http.StatusForbidden, store.AuditDenied, "needs the operator role"},
		{Identity{}, auth.OutcomeNone, false, http.StatusForbidden, store.AuditDenied, "no credential can have the operator role"},
		{Identity{}, auth.OutcomeNone, false, http.StatusUnauthorized, store.AuditDenied, "no credential"},
		{Identity{}, auth.OutcomeInvalid, false, http.StatusUnauthorized, store.AuditDenied, "invalid credential"},
		{Identity{}, auth.OutcomeUntrusted, false, http.StatusForbidden, store.AuditDenied, "identity headers from an untrusted peer"},
		{Identity{}, auth.OutcomeInvalid, false, http.StatusInternalServerError, store.AuditError, "credential check failed"},
		{Identity{}, auth.OutcomeNone, false, http.StatusSeeOther, store.AuditDenied, "no credential"},
	} {
		result, detail := auditResult(op, c.id, c.out, c.reached, c.status)
		require.Equal(t, [2]string{c.result, c.detail}, [2]string{result, detail}, "%+v", c)
	}
}

// A handler that panics is recorded as failed, and the panic is not
// swallowed (net/http drops the connection, as without the audit log).
func TestAuditPanic(t *testing.T) {
	_, _, o := roleOptions(t)
	rec := &memAudit{}
	o.Audit = rec
	s, err := New(o)
	require.NoError(t, err)
	rt := newRouter(s)
	rt.handle("POST /api/v1/runs/{id}/cancel", auth.RoleOperator, func(http.ResponseWriter, *http.Request) { panic("boom") })
	req := httptest.NewRequest(http.MethodPost, "/api/v1/runs/run-1/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+roleTokens[auth.RoleOperator])
	require.PanicsWithValue(t, "boom", func() { rt.mux.ServeHTTP(httptest.NewRecorder(), req) })
	es := rec.take()
	require.Len(t, es, 1)
	require.Equal(t, [4]string{"run.cancel", "run-1", store.AuditError, "internal server error"},
		[4]string{es[0].Action, es[0].Target, es[0].Result, es[0].Detail})
	require.Equal(t, http.StatusInternalServerError, es[0].Status)
}
