package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestTriggerAuth(t *testing.T) {
	const url = "/api/v1/workspaces/prod-network/runs"
	tests := []struct {
		name      string
		tokenFile bool // configure a token file holding testToken
		auth      string
		wantCode  int
		want      string
	}{
		{"no token configured", false, "Bearer " + testToken, http.StatusForbidden,
			`{"error": "mutating endpoints are disabled: no API token is configured on this driftwatch"}`},
		{"no token configured, no header", false, "", http.StatusForbidden,
			`{"error": "mutating endpoints are disabled: no API token is configured on this driftwatch"}`},
		{"missing header", true, "", http.StatusUnauthorized, `{"error": "missing bearer token"}`},
		{"empty bearer", true, "Bearer ", http.StatusUnauthorized, `{"error": "missing bearer token"}`},
		{"wrong scheme", true, "Basic " + testToken, http.StatusUnauthorized, `{"error": "missing bearer token"}`},
		{"wrong token", true, "Bearer nope", http.StatusUnauthorized, `{"error": "invalid bearer token"}`},
		{"token prefix", true, "Bearer " + testToken[:5], http.StatusUnauthorized, `{"error": "invalid bearer token"}`},
		{"token with suffix", true, "Bearer " + testToken + "x", http.StatusUnauthorized, `{"error": "invalid bearer token"}`},
		{"right token", true, "Bearer " + testToken, http.StatusAccepted,
			`{"workspace": "prod-network", "run_id": "run-prod-network-q1", "status": "queued"}`},
		{"scheme is case-insensitive", true, "bearer " + testToken, http.StatusAccepted,
			`{"workspace": "prod-network", "run_id": "run-prod-network-q1", "status": "queued"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			o := h.options()
			if tt.tokenFile {
				o.Config.TokenFile = writeToken(t, testToken+"\n")
			}
			ts := serve(t, o)
			hdr := map[string]string{}
			if tt.auth != "" {
				hdr["Authorization"] = tt.auth
			}
			code, rh, body := do(t, http.MethodPost, ts.URL+url, hdr)
			requireJSON(t, tt.wantCode, tt.want, code, rh, body)
			if tt.wantCode == http.StatusUnauthorized {
				require.Equal(t, `Bearer realm="driftwatch"`, rh.Get("WWW-Authenticate"))
			}
			if tt.wantCode == http.StatusAccepted {
				require.Equal(t, []string{"prod-network"}, h.triggeredNames())
				require.Equal(t, "/api/v1/runs/run-prod-network-q1", rh.Get("Location"))
			} else {
				require.Empty(t, h.triggeredNames(), "no run may be queued without authorization")
			}
			require.NotContains(t, body, testToken)
			require.NotContains(t, h.logs.String(), testToken)
		})
	}
}

func TestTriggerOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		workspace  string
		triggerErr error
		wantCode   int
		want       string
	}{
		{"queued", "billing-db", nil, http.StatusAccepted, `{"workspace": "billing-db", "run_id": "run-billing-db-q1", "status": "queued"}`},
		{"not configured", "nope", nil, http.StatusNotFound, `{"error": "unknown workspace"}`},
		{"unknown to the scheduler", "billing-db", fmt.Errorf("trigger %q: %w", "billing-db", errUnknown), http.StatusNotFound, `{"error": "unknown workspace"}`},
		{"busy", "billing-db", fmt.Errorf("trigger %q: %w", "billing-db", errBusy), http.StatusConflict,
			`{"error": "a run of this workspace is already queued or running", "run_id": "run-billing-db-inflight"}`},
		{"busy with a run the api does not show", "billing-db", &BusyError{Err: errBusy}, http.StatusConflict,
			`{"error": "a run of this workspace is already queued or running"}`},
		{"standby", "billing-db", errStandby, http.StatusServiceUnavailable, `{"error": "not scheduling: a standby"}`},
		{"scheduler stopped", "billing-db", fmt.Errorf("scheduler is shutting down"), http.StatusInternalServerError,
			`{"error": "internal error (see the driftwatch log)"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.setTriggerErr(tt.triggerErr)
			o := h.options()
			o.Config.TokenFile = writeToken(t, testToken)
			ts := serve(t, o)
			code, rh, body := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/"+tt.workspace+"/runs",
				map[string]string{"Authorization": "Bearer " + testToken})
			requireJSON(t, tt.wantCode, tt.want, code, rh, body)
		})
	}
}

func TestTokenRotation(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.TokenFile = writeToken(t, "old-token")
	ts := serve(t, o)
	post := func(tok string) int {
		code, _, _ := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", map[string]string{"Authorization": "Bearer " + tok})
		return code
	}
	require.Equal(t, http.StatusAccepted, post("old-token"))

	require.NoError(t, os.WriteFile(o.Config.TokenFile, []byte("new-token\n"), 0o600))
	require.Equal(t, http.StatusUnauthorized, post("old-token"))
	require.Equal(t, http.StatusAccepted, post("new-token"))

	// A token file that empties or vanishes revokes its token, never
	// opens anything: 401, and the log names the file (once).
	require.NoError(t, os.WriteFile(o.Config.TokenFile, nil, 0o600))
	code, rh, body := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", map[string]string{"Authorization": "Bearer "})
	requireJSON(t, http.StatusUnauthorized, `{"error": "missing bearer token"}`, code, rh, body)
	require.Equal(t, http.StatusUnauthorized, post("new-token"))
	require.Equal(t, http.StatusUnauthorized, post("wrong-token"))
	require.NoError(t, os.Remove(o.Config.TokenFile))
	require.Equal(t, http.StatusUnauthorized, post("new-token"))
	logs := h.logs.String()
	require.Contains(t, logs, "token file is empty")
	require.Equal(t, 1, strings.Count(logs, "token file is empty"), "logged once per change, not per request")
	require.Contains(t, logs, "file="+o.Config.TokenFile)
	require.Contains(t, logs, "read token file: open "+o.Config.TokenFile)
	require.Equal(t, []string{"sandbox", "sandbox"}, h.triggeredNames())
	// Back: it works again.
	require.NoError(t, os.WriteFile(o.Config.TokenFile, []byte("new-token\n"), 0o600))
	require.Equal(t, http.StatusAccepted, post("new-token"))
	require.NotContains(t, h.logs.String(), "new-token")
	require.NotContains(t, h.logs.String(), "old-token")
}

func TestAccessLog(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Config.TokenFile = writeToken(t, testToken)
	o.Config.AllowedHosts = []string{"example.com"} // httptest.NewRequest's Host
	s, err := New(o)
	require.NoError(t, err)

	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/workspaces/sandbox/runs?secret=query-canary", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusAccepted, rec.Code)

	req = httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/workspaces/nope?limit=3", nil)
	req.Header.Set("Authorization", "Bearer wrong-canary")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusNotFound, rec.Code)

	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/healthz", nil))

	logs := h.logs.String()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	var access []string
	for _, l := range lines {
		if strings.Contains(l, `msg="http request"`) {
			access = append(access, l)
		}
	}
	require.Len(t, access, 3, logs)
	require.Contains(t, access[0], `level=INFO msg="http request" method=POST path=/api/v1/workspaces/sandbox/runs status=202 bytes=`)
	require.Contains(t, access[0], " duration=0s")
	require.Contains(t, access[1], `level=INFO msg="http request" method=GET path=/api/v1/workspaces/nope status=404`)
	require.Contains(t, access[2], `level=DEBUG msg="http request" method=GET path=/healthz status=200`)
	for _, canary := range []string{"query-canary", "limit=3", "wrong-canary", testToken, "Bearer", "Authorization"} {
		require.NotContains(t, logs, canary)
	}
}

// proxyOptions is roleOptions in proxy mode: the proxy is trusted at
// trusted (a CIDR); platform admins, net operators, and approvers for the
// network tier (by label) and for team-billing (by owner).
func proxyOptions(t *testing.T, trusted string) (*harness, *recordingRemediations, Options) {
	t.Helper()
	h, rem, o := roleOptions(t)
	o.Config.Auth.Mode = config.AuthModeProxy
	o.Config.Auth.AnonymousRole = ""
	o.Config.Auth.Proxy.TrustedNetworks = []string{trusted}
	o.Config.Auth.Proxy.SecretFile = writeToken(t, testProxySecret+"\n")
	o.Config.Auth.Roles = []config.RoleMapping{
		{Role: config.RoleAdmin, Groups: []string{"platform"}},
		{Role: config.RoleOperator, Groups: []string{"net"}, Users: []string{"olga"}},
		{Role: config.RoleViewer, Emails: []string{"Vera@Example.com"}},
		{Role: config.RoleApprover, Users: []string{"ann"}, Workspaces: config.WorkspaceScope{Labels: map[string]string{"tier": "network"}}},
		{Role: config.RoleApprover, Users: []string{"bill"}, Workspaces: config.WorkspaceScope{Owners: []string{"team-billing"}}},
	}
	return h, rem, o
}

// testProxySecret is the shared secret the proxy of proxyOptions adds.
const testProxySecret = "proxy-secret-CANARY-0123456789abcdef"

// proxied is the headers the proxy sets for a person, with its shared
// secret.
func proxied(user, email, groups string) map[string]string {
	return map[string]string{"X-Forwarded-User": user, "X-Forwarded-Email": email, "X-Forwarded-Groups": groups,
		config.DefaultProxySecretHeader: testProxySecret}
}

type whoami struct {
	Name      string   `json:"name"`
	Method    string   `json:"method"`
	Roles     []string `json:"roles"`
	CSRFToken string   `json:"csrf_token"`
}

func getWhoami(t *testing.T, base string, hdr map[string]string) whoami {
	t.Helper()
	code, _, body := do(t, http.MethodGet, base+"/api/v1/whoami", hdr)
	require.Equal(t, http.StatusOK, code, body)
	var w whoami
	require.NoError(t, json.Unmarshal([]byte(body), &w))
	return w
}

// In proxy mode a person is who the proxy's headers say, from the
// proxy's address only; their roles come from users, emails and groups;
// tokens work as in token mode; without a credential nothing is open.
func TestProxyIdentity(t *testing.T) {
	h, _, o := proxyOptions(t, "127.0.0.0/8")
	ts := serve(t, o)

	require.Equal(t, whoami{Name: "pat", Method: "proxy", Roles: []string{"admin"}},
		withoutCSRF(getWhoami(t, ts.URL, proxied("pat", "pat@example.com", "dev, platform"))))
	require.Equal(t, whoami{Name: "olga", Method: "proxy", Roles: []string{"operator"}},
		withoutCSRF(getWhoami(t, ts.URL, proxied("olga", "", ""))))
	// The email alone names the person; emails match case-insensitively.
	require.Equal(t, whoami{Name: "vera@example.com", Method: "proxy", Roles: []string{"viewer"}},
		withoutCSRF(getWhoami(t, ts.URL, map[string]string{"X-Forwarded-Email": "vera@example.com", config.DefaultProxySecretHeader: testProxySecret})))
	// Tokens still work, for the CLI and CI.
	require.Equal(t, whoami{Name: "operator-bot", Method: "token:operator-bot", Roles: []string{"operator"}},
		getWhoami(t, ts.URL, bearerAuth(roleTokens[auth.RoleOperator])))

	// Pages name the person; signing out is the proxy's, so no form.
	code, _, body := do(t, http.MethodGet, ts.URL+"/", proxied("olga", "", ""))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "signed in as <strong>olga</strong>")
	require.NotContains(t, body, `<form class="signout"`)
	code, _, body = do(t, http.MethodGet, ts.URL+"/", bearerAuth(roleTokens[auth.RoleOperator]))
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, "signed in as <strong>", "an API token is nobody to greet")

	// Nobody matched: 403, a page that says so.
	code, _, body = do(t, http.MethodGet, ts.URL+"/", proxied("mallory", "m@example.com", "guests"))
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "You are signed in as mallory, but no role is granted to you")
	code, _, body = do(t, http.MethodGet, ts.URL+"/api/v1/workspaces", proxied("mallory", "", ""))
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "no role is granted")
	// No credential: 401, nothing is open unless anonymous_role says so.
	for _, path := range []string{"/", "/api/v1/workspaces", "/runs/run-net-3"} {
		code, _, body := get(t, ts.URL+path)
		require.Equal(t, http.StatusUnauthorized, code, "%s: %s", path, body)
	}
	o.Config.Auth.AnonymousRole = config.RoleViewer
	open := serve(t, o)
	code, _, body = get(t, open.URL+"/api/v1/workspaces")
	require.Equal(t, http.StatusOK, code, body)
	code, _, body = do(t, http.MethodPost, open.URL+"/api/v1/workspaces/sandbox/runs", nil)
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Empty(t, h.triggeredNames())
}

func withoutCSRF(w whoami) whoami {
	w.CSRFToken = ""
	return w
}

// From a peer outside trusted_networks the identity headers are refused
// (403), whatever X-Forwarded-For says, and the log names the peer, never
// the headers' values; a token from there still works.
func TestProxyUntrustedPeer(t *testing.T) {
	h, _, o := proxyOptions(t, "10.0.0.0/8")
	ts := serve(t, o)
	hdr := proxied("pat-CANARY", "pat-CANARY@example.com", "platform")
	hdr["X-Forwarded-For"] = "10.1.2.3"
	hdr["X-Real-Ip"] = "10.1.2.3"
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/workspaces"}, {http.MethodGet, "/"}, {http.MethodPost, "/api/v1/workspaces/sandbox/runs"},
	} {
		code, _, body := do(t, c.method, ts.URL+c.path, hdr)
		require.Equal(t, http.StatusForbidden, code, "%s %s: %s", c.method, c.path, body)
		require.Contains(t, body, "server.auth.proxy.trusted_networks")
	}
	// One header is enough to be refused.
	code, _, _ := do(t, http.MethodGet, ts.URL+"/api/v1/workspaces", map[string]string{"X-Forwarded-Groups": "platform"})
	require.Equal(t, http.StatusForbidden, code)
	require.Empty(t, h.triggeredNames())
	code, _, body := do(t, http.MethodGet, ts.URL+"/api/v1/workspaces", bearerAuth(roleTokens[auth.RoleViewer]))
	require.Equal(t, http.StatusOK, code, body)
	logs := h.logs.String()
	require.Contains(t, logs, `msg="identity headers refused: the peer is not in server.auth.proxy.trusted_networks" peer=127.0.0.1`)
	require.NotContains(t, logs, "CANARY")
	require.NotContains(t, logs, "platform")
}

// A mutating request the proxy authenticated must carry its identity's
// CSRF token (header or form field) and come from driftwatch's own
// origin; a token client needs neither.
func TestProxyCSRF(t *testing.T) {
	h, _, o := proxyOptions(t, "127.0.0.1/32")
	o.Config.ExternalURL = "https://drift.example.com"
	ts := serve(t, o)
	olga := proxied("olga", "", "")
	tok := getWhoami(t, ts.URL, olga).CSRFToken
	require.NotEmpty(t, tok)
	other := getWhoami(t, ts.URL, proxied("pat", "", "platform")).CSRFToken
	require.NotEqual(t, tok, other, "a token is the identity's")
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range olga {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	const trigger = "/api/v1/workspaces/sandbox/runs"
	for _, c := range []struct {
		name string
		hdr  map[string]string
		body string
		want int
	}{
		{"no token", with(nil), "", http.StatusForbidden},
		{"wrong token", with(map[string]string{"X-CSRF-Token": "nope"}), "", http.StatusForbidden},
		{"another identity's token", with(map[string]string{"X-CSRF-Token": other}), "", http.StatusForbidden},
		{"cross-site", with(map[string]string{"X-CSRF-Token": tok, "Sec-Fetch-Site": "cross-site"}), "", http.StatusForbidden},
		{"same-site", with(map[string]string{"X-CSRF-Token": tok, "Sec-Fetch-Site": "same-site"}), "", http.StatusForbidden},
		{"foreign origin", with(map[string]string{"X-CSRF-Token": tok, "Origin": "https://evil.example"}), "", http.StatusForbidden},
		{"null origin", with(map[string]string{"X-CSRF-Token": tok, "Origin": "null"}), "", http.StatusForbidden},
		{"header", with(map[string]string{"X-CSRF-Token": tok}), "", http.StatusAccepted},
		{"same-origin", with(map[string]string{"X-CSRF-Token": tok, "Sec-Fetch-Site": "same-origin"}), "", http.StatusAccepted},
		{"external origin", with(map[string]string{"X-CSRF-Token": tok, "Origin": "https://drift.example.com"}), "", http.StatusAccepted},
		{"form field", with(map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": ts.URL}), "csrf_token=" + tok, http.StatusAccepted},
		{"form field, wrong", with(map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), "csrf_token=x" + tok, http.StatusForbidden},
		{"api token", bearerAuth(roleTokens[auth.RoleOperator]), "", http.StatusAccepted},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(h.triggeredNames())
			code, _, body := send(t, http.MethodPost, ts.URL+trigger, c.hdr, c.body)
			require.Equal(t, c.want, code, body)
			if c.want == http.StatusAccepted {
				require.Len(t, h.triggeredNames(), before+1)
			} else {
				require.Len(t, h.triggeredNames(), before, "a refused request triggers nothing")
			}
		})
	}
	require.NotContains(t, h.logs.String(), tok)
}

// Approvers decide remediations of the workspaces their scope holds
// (labels, owners), admins of any; the decision is recorded as the
// caller's; silences record the person, not what the body claims.
func TestApproverScopeAndActor(t *testing.T) {
	h, rem, o := proxyOptions(t, "127.0.0.0/8")
	rem.add(store.Remediation{ID: "rem-billing", Workspace: "billing-db", State: store.RemediationPending, Refusals: []byte(`[]`)})
	ts := serve(t, o)
	decide := func(who map[string]string, id, what string) (int, string) {
		hdr := map[string]string{}
		for k, v := range who {
			hdr[k] = v
		}
		hdr["X-CSRF-Token"] = getWhoami(t, ts.URL, who).CSRFToken
		code, _, body := send(t, http.MethodPost, ts.URL+"/api/v1/remediations/"+id+"/"+what, hdr, "")
		return code, body
	}
	ann, bill, pat := proxied("ann", "", ""), proxied("bill", "", ""), proxied("pat", "", "platform")
	for _, c := range []struct {
		who        map[string]string
		id, what   string
		want       int
		decisionBy string
	}{
		{ann, "rem-pend", "approve", http.StatusOK, "approve rem-pend by ann"}, // prod-network: tier=network
		{ann, "rem-billing", "reject", http.StatusForbidden, ""},
		{bill, "rem-billing", "reject", http.StatusOK, "reject rem-billing by bill"}, // owner team-billing
		{bill, "rem-pend", "approve", http.StatusForbidden, ""},
		{pat, "rem-billing", "approve", http.StatusOK, "approve rem-billing by pat"}, // admin
		{proxied("olga", "", ""), "rem-pend", "approve", http.StatusForbidden, ""},   // operator
	} {
		before := len(rem.decisions())
		code, body := decide(c.who, c.id, c.what)
		require.Equal(t, c.want, code, "%v %s %s: %s", c.who, c.what, c.id, body)
		if c.decisionBy == "" {
			require.Len(t, rem.decisions(), before)
			continue
		}
		require.Equal(t, c.decisionBy, rem.decisions()[before])
	}
	// A named approver token is unscoped unless its entry says otherwise.
	code, _, body := send(t, http.MethodPost, ts.URL+"/api/v1/remediations/rem-billing/approve", bearerAuth(roleTokens[auth.RoleApprover]), "")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "approve rem-billing by token:approver-bot", rem.decisions()[len(rem.decisions())-1])

	olga := proxied("olga", "", "")
	olga["X-CSRF-Token"] = getWhoami(t, ts.URL, olga).CSRFToken
	code, _, body = send(t, http.MethodPost, ts.URL+"/api/v1/silences", olga,
		`{"workspace": "sandbox", "for": "1h", "comment": "x", "created_by": "somebody-else"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, _, body = send(t, http.MethodDelete, ts.URL+"/api/v1/silences/sil-db?by=somebody-else", olga, "")
	require.Equal(t, http.StatusOK, code, body)
	added, expired := h.silenceCalls()
	require.Equal(t, "olga", added[len(added)-1].CreatedBy)
	require.Equal(t, "sil-db olga", expired[len(expired)-1])
}

func TestNewChecksAuthOptions(t *testing.T) {
	h := newHarness(t)
	for name, c := range map[string]struct {
		tune func(*Options)
		want string
	}{
		"proxy without networks": {func(o *Options) { o.Config.Auth.Mode = config.AuthModeProxy }, "Options.Config.Auth.Proxy.TrustedNetworks is required"},
		"trust everyone": {func(o *Options) {
			o.Config.Auth.Mode, o.Config.Auth.Proxy.TrustedNetworks = config.AuthModeProxy, []string{"0.0.0.0/0"}
		}, `TrustedNetworks[0]: "0.0.0.0/0" trusts every address`},
		"unknown mode":   {func(o *Options) { o.Config.Auth.Mode = "saml" }, `Options.Config.Auth.Mode "saml": want token, proxy or oidc`},
		"bad token role": {func(o *Options) { o.Config.Auth.Tokens = []config.AuthToken{{Name: "ci", Role: "root", File: "x"}} }, `Options.Config.Auth.Tokens[0].Role "root" is not a role`},
		"reserved name":  {func(o *Options) { o.Config.Auth.Tokens = []config.AuthToken{{Name: "api", Role: "admin", File: "x"}} }, `Options.Config.Auth.Tokens[0].Name "api"`},
		"missing token file": {func(o *Options) {
			o.Config.Auth.Tokens = []config.AuthToken{{Name: "ci", Role: "admin", File: "/nonexistent/ci"}}
		}, "Options.Config.Auth.Tokens[0]: read token file: open /nonexistent/ci"},
		"open and none":      {func(o *Options) { o.Config.OpenReads, o.Config.Auth.AnonymousRole = true, config.RoleNone }, "OpenReads"},
		"anonymous operator": {func(o *Options) { o.Config.Auth.AnonymousRole = config.RoleOperator }, `AnonymousRole "operator"`},
	} {
		t.Run(name, func(t *testing.T) {
			o := h.options()
			c.tune(&o)
			_, err := New(o)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// A named token is read on every request: a rotated one applies at once,
// the old one stops working.
func TestNamedTokenRotation(t *testing.T) {
	h, _, o := roleOptions(t)
	ts := serve(t, o)
	file := o.Config.Auth.Tokens[1].File // operator-bot
	post := func(tok string) int {
		code, _, _ := do(t, http.MethodPost, ts.URL+"/api/v1/workspaces/sandbox/runs", bearerAuth(tok))
		return code
	}
	require.Equal(t, http.StatusAccepted, post(roleTokens[auth.RoleOperator]))
	require.NoError(t, os.WriteFile(file, []byte("rotated-CANARY\n"), 0o600))
	require.Equal(t, http.StatusUnauthorized, post(roleTokens[auth.RoleOperator]))
	require.Equal(t, http.StatusAccepted, post("rotated-CANARY"))
	require.Len(t, h.triggeredNames(), 2)
	require.NotContains(t, h.logs.String(), "CANARY")
}
