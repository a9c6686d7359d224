package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// oidcProvider is a real OpenID Connect provider on 127.0.0.1
// (mockoidc: discovery, JWKS, the authorization endpoint that approves
// at once, the token endpoint with PKCE), recording the authorization
// codes it hands out so the tests can look for them in driftwatch's log.
type oidcProvider struct {
	*mockoidc.MockOIDC
	mu    sync.Mutex
	codes []string
	// tamper, if set, changes the authorization request's parameters
	// before the provider reads them (a forged nonce, a wrong challenge).
	tamper func(url.Values)
}

func startProvider(t *testing.T, ln net.Listener) *oidcProvider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	p := &oidcProvider{MockOIDC: m}
	require.NoError(t, m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			tamper := p.tamper
			p.mu.Unlock()
			if strings.HasSuffix(r.URL.Path, mockoidc.AuthorizationEndpoint) && tamper != nil {
				q := r.URL.Query()
				tamper(q)
				r.URL.RawQuery = q.Encode()
			}
			if strings.HasSuffix(r.URL.Path, mockoidc.TokenEndpoint) && r.ParseForm() == nil {
				p.mu.Lock()
				p.codes = append(p.codes, r.Form.Get("code"))
				p.mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	}))
	if ln == nil {
		var lc net.ListenConfig
		ln, err = lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

func (p *oidcProvider) seenCodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.codes)
}

// oidcEnv is a driftwatch in oidc mode on 127.0.0.1, its external URL its
// own address.
type oidcEnv struct {
	h      *harness
	s      *Server
	base   string
	secret string // the client secret (a canary)
	token  string // the API token
	// sessions is the real store the sessions are kept in, at dbPath.
	sessions *sqlite.Store
	dbPath   string
}

// newOIDCEnv starts driftwatch in oidc mode against the provider at
// issuer, whose client is clientID/secret.
func newOIDCEnv(t *testing.T, issuer, clientID, secret string, edit func(*Options)) *oidcEnv {
	t.Helper()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	tokenFile := filepath.Join(dir, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("api-token-CANARY"), 0o600))
	h := newHarness(t)
	o := h.options()
	dbPath := filepath.Join(dir, "driftwatch.db")
	sessions, err := sqlite.Open(t.Context(), dbPath, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sessions.Close()) })
	o.Sessions = sessions
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	o.Config.Listen = ts.Listener.Addr().String()
	o.Config.ExternalURL = base
	o.Config.TokenFile = tokenFile
	o.Config.Auth = config.Auth{
		Mode: config.AuthModeOIDC,
		OIDC: config.AuthOIDC{
			IssuerURL: issuer, ClientID: clientID, ClientSecretFile: secretFile,
			Scopes: []string{"openid", "email", "profile", "groups"},
		},
		Roles: []config.RoleMapping{
			{Role: config.RoleOperator, Groups: []string{"engineering"}},
			{Role: config.RoleApprover, Emails: []string{"JANE.DOE@example.com"}},
		},
	}
	if edit != nil {
		edit(&o)
	}
	s, err := New(o)
	require.NoError(t, err)
	ts.Config.Handler = s.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return &oidcEnv{h: h, s: s, base: base, secret: secret, token: "api-token-CANARY", sessions: sessions, dbPath: dbPath}
}

// browserClient is a Go HTTP client acting as a browser: a cookie jar,
// redirects followed, and every response of driftwatch recorded.
type browserClient struct {
	*http.Client
	mu   sync.Mutex
	seen []*http.Response
}

func (b *browserClient) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		b.mu.Lock()
		b.seen = append(b.seen, resp)
		b.mu.Unlock()
	}
	return resp, err
}

func newBrowserClient(t *testing.T) *browserClient {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	b := &browserClient{}
	b.Client = &http.Client{Jar: jar, Transport: b, Timeout: 30 * time.Second}
	return b
}

// setCookie is the Set-Cookie of name that the response to path sent.
func (b *browserClient) setCookie(t *testing.T, path, name string) *http.Cookie {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, resp := range b.seen {
		if resp.Request.URL.Path != path {
			continue
		}
		for _, c := range resp.Cookies() {
			if c.Name == name {
				return c
			}
		}
	}
	t.Fatalf("no Set-Cookie %s from %s", name, path)
	return nil
}

func oget(t *testing.T, c *http.Client, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	return odo(t, c, http.MethodGet, u, hdr...)
}

func odo(t *testing.T, c *http.Client, method, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

type oidcWhoami struct {
	Name   string   `json:"name"`
	Method string   `json:"method"`
	Roles  []string `json:"roles"`
	CSRF   string   `json:"csrf_token"`
}

func (e *oidcEnv) whoami(t *testing.T, c *http.Client) (int, oidcWhoami) {
	t.Helper()
	resp, body := oget(t, c, e.base+"/api/v1/whoami")
	var w oidcWhoami
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(body), &w), body)
	}
	return resp.StatusCode, w
}

// TestOIDCSignIn signs in through a real provider with the authorization
// code flow, then uses the session as a person's browser would.
func TestOIDCSignIn(t *testing.T) {
	p := startProvider(t, nil)
	e := newOIDCEnv(t, p.Issuer(), p.ClientID, p.ClientSecret, nil)
	b := newBrowserClient(t)

	t.Run("the API answers 401 without a session", func(t *testing.T) {
		resp, _ := oget(t, b.Client, e.base+"/api/v1/workspaces")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Empty(t, b.Jar.Cookies(mustURL(t, e.base)))
	})

	t.Run("a page sends the browser to sign in, then back", func(t *testing.T) {
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, _ := oget(t, noFollow, e.base+"/workspaces/prod-network?tab=runs")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/auth/login?next="+url.QueryEscape("/workspaces/prod-network?tab=runs"), resp.Header.Get("Location"))

		resp, body := oget(t, b.Client, e.base+"/workspaces/prod-network?tab=runs")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, e.base+"/workspaces/prod-network?tab=runs", resp.Request.URL.String(), "back where it started")
		require.Contains(t, body, "aws_security_group.web")
		// It went through the provider, with PKCE (S256), state and nonce.
		var authz *url.URL
		for _, r := range b.seen {
			if strings.HasSuffix(r.Request.URL.Path, mockoidc.AuthorizationEndpoint) {
				authz = r.Request.URL
			}
		}
		require.NotNil(t, authz, "the provider's authorization endpoint was visited")
		q := authz.Query()
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		require.NotEmpty(t, q.Get("code_challenge"))
		require.NotEmpty(t, q.Get("state"))
		require.NotEmpty(t, q.Get("nonce"))
		require.Equal(t, e.base+"/auth/callback", q.Get("redirect_uri"))
	})

	t.Run("the session cookie", func(t *testing.T) {
		c := b.setCookie(t, "/auth/callback", auth.SessionCookie)
		require.True(t, c.HttpOnly)
		require.False(t, c.Secure, "http on loopback: a Secure cookie would never come back")
		require.Equal(t, http.SameSiteLaxMode, c.SameSite)
		require.Equal(t, "/", c.Path)
		require.InDelta(t, (12 * time.Hour).Seconds(), c.MaxAge, 5)
		// Sealed: nothing of the person is readable in it.
		for _, plain := range []string{"jane", "engineering", "1234567890"} {
			require.NotContains(t, c.Value, plain)
		}
		login := b.setCookie(t, "/auth/callback", auth.LoginCookie)
		require.Equal(t, -1, login.MaxAge, "the login cookie is cleared")
	})

	t.Run("whoami: the person, with the roles server.auth.roles maps", func(t *testing.T) {
		code, w := e.whoami(t, b.Client)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "jane.doe", w.Name)
		require.Equal(t, auth.MethodOIDC, w.Method)
		require.ElementsMatch(t, []string{"operator", "approver"}, w.Roles, "group engineering, email in another case")
	})

	_, me := e.whoami(t, b.Client)
	csrf := me.CSRF
	require.NotEmpty(t, csrf)
	require.NotEqual(t, e.s.auth.CSRFToken(Identity{Name: "jane.doe", Method: auth.MethodOIDC}), csrf,
		"the CSRF token is the session's, not the name's")
	t.Run("a mutating call needs the CSRF token", func(t *testing.T) {
		u := e.base + "/api/v1/workspaces/prod-network/runs"
		resp, body := odo(t, b.Client, http.MethodPost, u)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		require.Contains(t, body, "CSRF")
		resp, body = odo(t, b.Client, http.MethodPost, u, auth.CSRFHeader, csrf, "Sec-Fetch-Site", "cross-site")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		require.Empty(t, e.h.triggered)
		resp, body = odo(t, b.Client, http.MethodPost, u, auth.CSRFHeader, csrf, "Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusAccepted, resp.StatusCode, body)
		require.Equal(t, []string{"prod-network"}, e.h.triggered)
	})

	t.Run("API tokens still work", func(t *testing.T) {
		resp, body := oget(t, http.DefaultClient, e.base+"/api/v1/whoami", "Authorization", "Bearer "+e.token)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `"method": "token:api"`)
	})

	t.Run("a forged or expired session is no session", func(t *testing.T) {
		good := b.setCookie(t, "/auth/callback", auth.SessionCookie).Value
		raw := []byte(good)
		raw[len(raw)/2] ^= 1
		forged := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, v := range []string{string(raw), "x", strings.Repeat("A", 100)} {
			resp, _ := oget(t, forged, e.base+"/api/v1/whoami", "Cookie", auth.SessionCookie+"="+v)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			resp, _ = oget(t, forged, e.base+"/", "Cookie", auth.SessionCookie+"="+v)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		}
		// The login cookie (the same key) is not a session either.
		var ref auth.SessionRef
		require.True(t, e.s.auth.OIDC().Open(auth.SessionCookie, good, &ref))
		resp, _ := oget(t, forged, e.base+"/api/v1/whoami", "Cookie", auth.SessionCookie+"="+mustSeal(t, e.s.auth.OIDC(), auth.LoginCookie, ref))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		// A session id without its row (made up, or one never stored).
		resp, _ = oget(t, forged, e.base+"/api/v1/whoami", "Cookie", auth.SessionCookie+"="+mustSeal(t, e.s.auth.OIDC(), auth.SessionCookie,
			auth.SessionRef{ID: "made-up", Expiry: time.Now().Add(time.Hour).Unix()}))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		code, _ := e.whoami(t, b.Client)
		require.Equal(t, http.StatusOK, code)
	})

	t.Run("logout needs the CSRF token and ends the session", func(t *testing.T) {
		resp, body := odo(t, b.Client, http.MethodPost, e.base+"/auth/logout")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		code, _ := e.whoami(t, b.Client)
		require.Equal(t, http.StatusOK, code, "still signed in")

		// Every page names the person and posts its sign-out form with
		// the CSRF token, as a browser would submit it.
		resp, body = oget(t, b.Client, e.base+"/")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `signed in as <strong>jane.doe</strong>`)
		form := `<form class="signout" method="post" action="/auth/logout"><input type="hidden" name="csrf_token" value="` + csrf + `">`
		require.Contains(t, body, form)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.base+"/auth/logout", strings.NewReader(url.Values{"csrf_token": {csrf}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err = b.Client.Do(req)
		require.NoError(t, err)
		page, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
		require.Contains(t, string(page), "Signed out")
		require.NotContains(t, string(page), "signed in as <strong>", "the sign-out page names nobody")
		code, _ = e.whoami(t, b.Client)
		require.Equal(t, http.StatusUnauthorized, code)
	})

	t.Run("nothing secret is logged", func(t *testing.T) {
		logs := e.h.logs.String()
		require.Contains(t, logs, `msg="oidc sign-in" user=jane.doe`)
		require.Contains(t, logs, `msg="oidc sign-out" user=jane.doe`)
		canaries := append([]string{e.secret, e.token, b.setCookie(t, "/auth/callback", auth.SessionCookie).Value}, p.seenCodes()...)
		require.NotEmpty(t, p.seenCodes())
		for _, c := range canaries {
			require.NotEmpty(t, c)
			require.NotContains(t, logs, c)
		}
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func mustSeal(t *testing.T, a *auth.OIDC, name string, v any) string {
	s, err := a.Seal(name, v)
	require.NoError(t, err)
	return s
}

// A sign-in goes back to a path on driftwatch only: never another site.
func TestOIDCOpenRedirect(t *testing.T) {
	p := startProvider(t, nil)
	e := newOIDCEnv(t, p.Issuer(), p.ClientID, p.ClientSecret, nil)
	for _, next := range []string{"//evil.example/", "https://evil.example/x", "/\\evil.example"} {
		b := newBrowserClient(t)
		resp, _ := oget(t, b.Client, e.base+"/auth/login?next="+url.QueryEscape(next))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, e.base+"/", resp.Request.URL.String(), "next=%q", next)
	}
}

// The callback refuses what the browser did not start: another state, a
// missing login cookie, an error from the provider.
func TestOIDCCallbackRefusals(t *testing.T) {
	p := startProvider(t, nil)
	e := newOIDCEnv(t, p.Issuer(), p.ClientID, p.ClientSecret, nil)
	noFollow := func() *http.Client {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}

	t.Run("no login cookie", func(t *testing.T) {
		resp, body := oget(t, noFollow(), e.base+"/auth/callback?state=x&code=y")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, body, "not started here")
	})
	t.Run("state mismatch", func(t *testing.T) {
		c := noFollow()
		resp, _ := oget(t, c, e.base+"/auth/login")
		require.Equal(t, http.StatusFound, resp.StatusCode)
		authz, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(authz.String(), p.Issuer()+"/"), "to the provider: %s", authz)
		resp, body := oget(t, c, e.base+"/auth/callback?state=other&code=y")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, body, "state does not match")
		resp, body = oget(t, c, e.base+"/auth/callback?error=access_denied&state="+authz.Query().Get("state"))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "the login cookie was cleared by the refusal")
		require.Contains(t, body, "not started here")
	})
	t.Run("provider error", func(t *testing.T) {
		c := noFollow()
		resp, _ := oget(t, c, e.base+"/auth/login")
		authz, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		resp, body := oget(t, c, e.base+"/auth/callback?error=access_denied&error_description=CANARY&state="+authz.Query().Get("state"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Contains(t, body, "access_denied")
		require.NotContains(t, e.h.logs.String(), "CANARY")
	})
	t.Run("a code replayed", func(t *testing.T) {
		b := newBrowserClient(t)
		resp, _ := oget(t, b.Client, e.base+"/")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		codes := p.seenCodes()
		c := noFollow()
		resp, _ = oget(t, c, e.base+"/auth/login")
		authz, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		resp, body := oget(t, c, e.base+"/auth/callback?code="+url.QueryEscape(codes[len(codes)-1])+"&state="+authz.Query().Get("state"))
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, body)
		require.NotContains(t, e.h.logs.String(), codes[len(codes)-1])
	})
	t.Run("an ID token for another sign-in (nonce)", func(t *testing.T) {
		p.mu.Lock()
		p.tamper = func(q url.Values) { q.Set("nonce", "someone-elses") }
		p.mu.Unlock()
		defer func() { p.mu.Lock(); p.tamper = nil; p.mu.Unlock() }()
		resp, body := oget(t, newBrowserClient(t).Client, e.base+"/")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		require.Contains(t, body, "not issued for this sign-in")
	})
	t.Run("PKCE: a code is worth nothing without the verifier", func(t *testing.T) {
		// Another challenge than driftwatch's: its verifier no longer
		// matches, and the provider refuses the exchange.
		p.mu.Lock()
		p.tamper = func(q url.Values) { q.Set("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM") }
		p.mu.Unlock()
		defer func() { p.mu.Lock(); p.tamper = nil; p.mu.Unlock() }()
		resp, body := oget(t, newBrowserClient(t).Client, e.base+"/")
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, body)
	})
	t.Run("the wrong client secret", func(t *testing.T) {
		e2 := newOIDCEnv(t, p.Issuer(), p.ClientID, "wrong-secret-CANARY", nil)
		resp, body := oget(t, newBrowserClient(t).Client, e2.base+"/")
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, body)
		require.Contains(t, e2.h.logs.String(), "token exchange failed")
		require.NotContains(t, e2.h.logs.String(), "wrong-secret-CANARY")
	})
}

// A provider that is down when driftwatch starts does not stop it; the
// sign-in works once the provider is up.
func TestOIDCProviderDownAtStart(t *testing.T) {
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	issuer := "http://" + addr + "/oidc"
	e := newOIDCEnv(t, issuer, m.ClientID, m.ClientSecret, nil)
	e.s.auth.OIDC().RetryAfter = 0
	resp, body := oget(t, newBrowserClient(t).Client, e.base+"/")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Contains(t, body, "cannot be reached")
	resp, _ = oget(t, http.DefaultClient, e.base+"/healthz")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	ln, err = lc.Listen(t.Context(), "tcp", addr)
	require.NoError(t, err)
	p := &oidcProvider{MockOIDC: m}
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	require.Equal(t, issuer, p.Issuer())
	b := newBrowserClient(t)
	resp, body = oget(t, b.Client, e.base+"/")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	code, w := e.whoami(t, b.Client)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "jane.doe", w.Name)
}

// A person no server.auth.roles entry names is signed in but may do
// nothing: 403 naming them.
func TestOIDCNoRole(t *testing.T) {
	p := startProvider(t, nil)
	p.QueueUser(&mockoidc.MockUser{Subject: "42", Email: "eve@example.com", EmailVerified: true, PreferredUsername: "eve", Groups: []string{"sales"}})
	e := newOIDCEnv(t, p.Issuer(), p.ClientID, p.ClientSecret, nil)
	b := newBrowserClient(t)
	resp, body := oget(t, b.Client, e.base+"/")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body, "signed in as eve, but no role is granted to you")
}

func TestOIDCOptions(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s"), 0o600))
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("short"), 0o600))
	oidcServer := func(ext string, f func(*config.AuthOIDC)) config.Server {
		c := config.Server{ExternalURL: ext, Auth: config.Auth{Mode: config.AuthModeOIDC, OIDC: config.AuthOIDC{
			IssuerURL: "https://login.example.com", ClientID: "dw", ClientSecretFile: secret,
		}}}
		if f != nil {
			f(&c.Auth.OIDC)
		}
		return c
	}
	for name, c := range map[string]struct {
		cfg  config.Server
		want string
	}{
		"http external url": {oidcServer("http://drift.example.com", nil), "oidc mode needs an https external URL"},
		"no redirect url":   {oidcServer("", nil), "RedirectURL is required without"},
		"missing secret":    {oidcServer("https://d.example.com", func(o *config.AuthOIDC) { o.ClientSecretFile = filepath.Join(dir, "nope") }), "ClientSecretFile"},
		"short cookie key":  {oidcServer("https://d.example.com", func(o *config.AuthOIDC) { o.CookieSecretFile = short }), "fewer than 32 bytes"},
		"no issuer":         {oidcServer("https://d.example.com", func(o *config.AuthOIDC) { o.IssuerURL = "" }), "IssuerURL is required"},
	} {
		t.Run(name, func(t *testing.T) {
			o := newHarness(t).options()
			o.Config = c.cfg
			_, err := New(o)
			require.ErrorContains(t, err, c.want)
		})
	}

	// oidc mode needs a session store: the harness's fake store is none.
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte(strings.Repeat("k", 40)), 0o600))
	withKey := oidcServer("https://d.example.com/dw/", func(o *config.AuthOIDC) { o.CookieSecretFile = key })
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	o := newHarness(t).options()
	o.Config = withKey
	_, err = New(o)
	require.ErrorContains(t, err, "Options.Sessions is required")
	o.Sessions = st
	_, err = New(o)
	require.NoError(t, err)
	o.Config.Auth.OIDC.SessionTTL, o.Config.Auth.OIDC.IdleTimeout = config.Duration(time.Hour), config.Duration(2*time.Hour)
	_, err = New(o)
	require.ErrorContains(t, err, "IdleTimeout 2h0m0s is longer than SessionTTL 1h0m0s")
}
