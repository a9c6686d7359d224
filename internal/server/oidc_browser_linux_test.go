//go:build linux

package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
)

// TestOIDCSignInBrowser signs in with headless chromium through the real
// redirect flow: driftwatch's page, the provider's authorization
// endpoint, the callback, and back to the page, signed in. The page then
// makes API calls as a script of driftwatch's origin would: a mutating
// one works with the CSRF token and is refused without; logout ends the
// session.
func TestOIDCSignInBrowser(t *testing.T) {
	bin := browsertest.Chromium(t)
	p := startProvider(t, nil)
	e := newOIDCEnv(t, p.Issuer(), p.ClientID, p.ClientSecret, nil)

	home := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(home, "profile")),
		chromedp.Flag("disable-quic", true),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first Run starts the browser: no timeout on it (it would stop
	// the browser); each step below has its own.
	_, err := chromedp.Call(ctx, cdppage.SetBypassCSP, cdppage.SetBypassCSPParams{Enabled: true})
	require.NoError(t, err, "start chromium") // driftwatch's pages allow no script: the test's fetch calls act as one
	step := func(t *testing.T) context.Context {
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		t.Cleanup(scancel)
		return sctx
	}
	fetch := func(t *testing.T, method, path, csrf string) (int, string) {
		t.Helper()
		hdr := "{}"
		if csrf != "" {
			hdr = `{"X-CSRF-Token": ` + jsString(csrf) + `}`
		}
		js := `fetch(` + jsString(e.base+path) + `, {method: ` + jsString(method) + `, headers: ` + hdr + `, credentials: "same-origin"})` +
			`.then(async r => ({status: r.status, body: await r.text()}))`
		res, err := chromedp.Run(step(t), chromedp.Evaluate[struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}](js, chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		return res.Status, res.Body
	}

	t.Run("sign in through the provider", func(t *testing.T) {
		sctx := step(t)
		require.NoError(t, chromedp.Do(sctx, chromedp.Navigate(e.base+"/workspaces/prod-network")))
		loc, err := chromedp.Run(sctx, chromedp.Location())
		require.NoError(t, err)
		require.Equal(t, e.base+"/workspaces/prod-network", loc, "back on the page it asked for")
		body, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS("body")))
		require.NoError(t, err)
		require.Contains(t, body, "aws_security_group.web")
		require.NotEmpty(t, p.seenCodes(), "the code was exchanged at the provider")
	})

	t.Run("the page's identity", func(t *testing.T) {
		code, body := fetch(t, "GET", "/api/v1/whoami", "")
		require.Equal(t, 200, code, body)
		var w oidcWhoami
		require.NoError(t, json.Unmarshal([]byte(body), &w))
		require.Equal(t, "jane.doe", w.Name)
		require.Equal(t, auth.MethodOIDC, w.Method)
		require.ElementsMatch(t, []string{"operator", "approver"}, w.Roles)
	})

	t.Run("the session cookie is HttpOnly and SameSite=Lax", func(t *testing.T) {
		res, err := chromedp.Call(step(t), network.GetCookies, network.GetCookiesParams{URLs: []string{e.base + "/"}})
		require.NoError(t, err)
		var found *network.Cookie
		for _, c := range res.Cookies {
			if c.Name == auth.SessionCookie {
				found = c
			}
			require.NotEqual(t, auth.LoginCookie, c.Name, "the login cookie is gone")
		}
		require.NotNil(t, found)
		require.True(t, found.HTTPOnly)
		require.Equal(t, network.CookieSameSiteLax, found.SameSite)
		doc, err := chromedp.Run(step(t), chromedp.Evaluate[string](`document.cookie`))
		require.NoError(t, err)
		require.NotContains(t, doc, auth.SessionCookie, "scripts cannot read it")
		require.NotContains(t, e.h.logs.String(), found.Value)
	})

	// The CSRF token is the session's: a page reads it from whoami.
	_, who := fetch(t, "GET", "/api/v1/whoami", "")
	var me oidcWhoami
	require.NoError(t, json.Unmarshal([]byte(who), &me))
	csrf := me.CSRF
	require.NotEmpty(t, csrf)
	t.Run("a mutating call needs the CSRF token", func(t *testing.T) {
		code, body := fetch(t, "POST", "/api/v1/workspaces/prod-network/runs", "")
		require.Equal(t, 403, code, body)
		require.Empty(t, e.h.triggered)
		code, body = fetch(t, "POST", "/api/v1/workspaces/prod-network/runs", csrf)
		require.Equal(t, 202, code, body)
		require.Equal(t, []string{"prod-network"}, e.h.triggered)
	})

	t.Run("logout ends the session", func(t *testing.T) {
		code, body := fetch(t, "POST", "/auth/logout", "")
		require.Equal(t, 403, code, body)
		code, _ = fetch(t, "GET", "/api/v1/whoami", "")
		require.Equal(t, 200, code, "a logout without the token changes nothing")
		code, body = fetch(t, "POST", "/auth/logout", csrf)
		require.Equal(t, 200, code, body)
		require.Contains(t, body, "Signed out")
		code, _ = fetch(t, "GET", "/api/v1/whoami", "")
		require.Equal(t, 401, code)
		// The session's row is gone: the old cookie signs no one in.
		list, err := e.sessions.Sessions(t.Context(), store.SessionFilter{})
		require.NoError(t, err)
		require.Empty(t, list)
	})

	logs := e.h.logs.String()
	for _, c := range append([]string{e.secret}, p.seenCodes()...) {
		require.NotContains(t, logs, c)
	}
	require.NotContains(t, logs, "level=ERROR", logs)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
