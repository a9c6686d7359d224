//go:build linux

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/browsertest"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/tftest"
)

// oauth2Proxy is the oauth2-proxy binary (DRIFTWATCH_OAUTH2_PROXY, which
// `make auth-tools` provisions with hack/provision-auth.sh).
func oauth2Proxy(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DRIFTWATCH_OAUTH2_PROXY")
	if p == "" {
		tftest.Unavailable(t, "oauth2-proxy not provisioned (DRIFTWATCH_OAUTH2_PROXY); run hack/provision-auth.sh")
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tftest.Unavailable(t, fmt.Sprintf("DRIFTWATCH_OAUTH2_PROXY=%s is not an executable file", p))
	}
	return p
}

// TestProxyModeBehindOAuth2Proxy runs driftwatch in proxy mode behind a
// real oauth2-proxy that signs people in with the test's OpenID Connect
// provider, and signs in with headless chromium through the proxy: the
// identity driftwatch sees is the proxy's headers, mapped by
// server.auth.roles, and a mutating call needs the CSRF token.
func TestProxyModeBehindOAuth2Proxy(t *testing.T) {
	proxyBin := oauth2Proxy(t)
	bin := browsertest.Chromium(t)
	p := startProvider(t, nil)

	// driftwatch, in proxy mode, trusting the proxy on 127.0.0.1.
	h := newHarness(t)
	o := h.options()
	o.Config.Auth = config.Auth{
		Mode:  config.AuthModeProxy,
		Proxy: config.AuthProxy{TrustedNetworks: []string{"127.0.0.1/32"}},
		Roles: []config.RoleMapping{{Role: config.RoleOperator, Groups: []string{"engineering"}}},
	}
	up := serve(t, o)

	// oauth2-proxy in front of it.
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	front := "http://" + addr
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(p.ClientSecret), 0o600))
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, proxyBin,
		"--http-address="+addr,
		"--upstream="+up.URL+"/",
		"--provider=oidc",
		"--oidc-issuer-url="+p.Issuer(),
		"--client-id="+p.ClientID,
		"--client-secret-file="+secretFile,
		"--redirect-url="+front+"/oauth2/callback",
		"--scope=openid email profile groups",
		"--code-challenge-method=S256",
		"--email-domain=*",
		"--cookie-secure=false",
		"--skip-provider-button=true",
		"--pass-user-headers=true",
	)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "OAUTH2_PROXY_COOKIE_SECRET=0123456789abcdef0123456789abcdef"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("oauth2-proxy output:\n%s", out.String())
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(front + "/ping")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond, "oauth2-proxy does not answer /ping")

	// Through the proxy, without signing in: no way to driftwatch.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(front + "/api/v1/whoami")
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusOK, resp.StatusCode, "oauth2-proxy lets nobody through unsigned")

	home := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(home, "profile")),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	// driftwatch's pages allow no script: the test's fetch calls act as one.
	_, err = chromedp.Call(bctx, cdppage.SetBypassCSP, cdppage.SetBypassCSPParams{Enabled: true})
	require.NoError(t, err, "start chromium")
	step := func() context.Context {
		sctx, scancel := context.WithTimeout(bctx, 30*time.Second)
		t.Cleanup(scancel)
		return sctx
	}

	require.NoError(t, chromedp.Do(step(), chromedp.Navigate(front+"/workspaces/prod-network")))
	loc, err := chromedp.Run(step(), chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, front+"/workspaces/prod-network", loc, "signed in through the proxy and back")
	body, err := chromedp.Run(step(), chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.Contains(t, body, "aws_security_group.web")
	require.NotEmpty(t, p.seenCodes(), "oauth2-proxy exchanged a code at the provider")

	raw, err := chromedp.Run(step(), chromedp.Evaluate[string](
		`fetch(`+jsString(front+"/api/v1/whoami")+`).then(r => r.text())`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	var who struct {
		Name      string   `json:"name"`
		Method    string   `json:"method"`
		Roles     []string `json:"roles"`
		CSRFToken string   `json:"csrf_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &who), raw)
	require.Equal(t, MethodProxy, who.Method)
	require.Equal(t, []string{"operator"}, who.Roles, "the groups the provider gave, through the proxy's headers")
	require.NotEmpty(t, who.Name)
	require.NotEmpty(t, who.CSRFToken)

	post := func(csrf string) int {
		hdr := "{}"
		if csrf != "" {
			hdr = `{"X-CSRF-Token": ` + jsString(csrf) + `}`
		}
		code, err := chromedp.Run(step(), chromedp.Evaluate[int](
			`fetch(`+jsString(front+"/api/v1/workspaces/prod-network/runs")+`, {method: "POST", headers: `+hdr+`}).then(r => r.status)`,
			chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		return code
	}
	require.Equal(t, http.StatusForbidden, post(""))
	require.Empty(t, h.triggered)
	require.Equal(t, http.StatusAccepted, post(who.CSRFToken))
	require.Equal(t, []string{"prod-network"}, h.triggered)
}
