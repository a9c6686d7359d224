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
	"go.yaml.in/yaml/v3"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/testutil/browsertest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// oauth2Proxy is the oauth2-proxy binary (DRIFTWATCH_OAUTH2_PROXY, which
// `make auth-tools` provisions with hack/provision-auth.sh).
func oauth2Proxy(t *testing.T) string {
	t.Helper()
	tftest.Short(t, "oauth2-proxy")
	p := os.Getenv("DRIFTWATCH_OAUTH2_PROXY")
	if p == "" {
		tftest.Unavailable(t, "oauth2-proxy not provisioned (DRIFTWATCH_OAUTH2_PROXY); run hack/provision-auth.sh")
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tftest.Unavailable(t, fmt.Sprintf("DRIFTWATCH_OAUTH2_PROXY=%s is not an executable file", p))
	}
	return p
}

// oauth2ProxyAlphaConfig writes oauth2-proxy's --alpha-config for the
// legacy flags given (oauth2-proxy converts them itself), plus the
// injected request header that carries driftwatch's shared secret, read
// from secretFile: the legacy flags cannot add a static header.
func oauth2ProxyAlphaConfig(t *testing.T, proxyBin, dir, secretFile string, legacy []string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), proxyBin, append(legacy, "--convert-config-to-alpha")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "OAUTH2_PROXY_COOKIE_SECRET=0123456789abcdef0123456789abcdef"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "oauth2-proxy --convert-config-to-alpha: %s", stderr.String())
	var alpha map[string]any
	require.NoError(t, yaml.Unmarshal(out, &alpha))
	headers, _ := alpha["injectRequestHeaders"].([]any)
	require.NotEmpty(t, headers, "the converted config injects the identity headers:\n%s", out)
	alpha["injectRequestHeaders"] = append(headers, map[string]any{
		"name":   config.DefaultProxySecretHeader,
		"values": []any{map[string]any{"secretSource": map[string]any{"fromFile": secretFile}}},
	})
	b, err := yaml.Marshal(alpha)
	require.NoError(t, err)
	path := filepath.Join(dir, "oauth2-proxy-alpha.yaml")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// TestProxyModeBehindOAuth2Proxy runs driftwatch in proxy mode behind a
// real oauth2-proxy that signs people in with the test's OpenID Connect
// provider, and signs in with headless chromium through the proxy: the
// identity driftwatch sees is the proxy's headers, mapped by
// server.auth.roles, believed with the shared secret the proxy adds
// (injectRequestHeaders of its alpha config), and a mutating call needs
// the CSRF token. The same headers sent straight to driftwatch from the
// proxy's address, without the secret, name nobody.
func TestProxyModeBehindOAuth2Proxy(t *testing.T) {
	proxyBin := oauth2Proxy(t)
	bin := browsertest.Chromium(t)
	p := startProvider(t, nil)
	dir := t.TempDir()
	// oauth2-proxy sends the file's content as is: no trailing newline.
	proxySecret := filepath.Join(dir, "proxy-secret")
	require.NoError(t, os.WriteFile(proxySecret, []byte("oauth2-proxy-secret-CANARY-0123456789abcdef"), 0o600))

	// driftwatch, in proxy mode, trusting the proxy on 127.0.0.1 with its
	// secret.
	h := newHarness(t)
	o := h.options()
	o.Config.Auth = config.Auth{
		Mode:  config.AuthModeProxy,
		Proxy: config.AuthProxy{TrustedNetworks: []string{"127.0.0.1/32"}, SecretFile: proxySecret},
		Roles: []config.RoleMapping{{Role: config.RoleOperator, Groups: []string{"engineering"}}},
	}
	up := serve(t, o)

	// Code next to the proxy (same address) that forges the identity
	// headers gets nowhere.
	forged := map[string]string{"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "engineering"}
	code, _, page := do(t, http.MethodGet, up.URL+"/api/v1/whoami", forged)
	require.Equal(t, http.StatusUnauthorized, code, page)
	code, _, page = do(t, http.MethodPost, up.URL+"/api/v1/workspaces/prod-network/runs", forged)
	require.Equal(t, http.StatusUnauthorized, code, page)
	require.Empty(t, h.triggeredNames())

	// oauth2-proxy in front of it.
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	front := "http://" + addr
	secretFile := filepath.Join(dir, "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(p.ClientSecret), 0o600))
	// The alpha config holds the server, upstream, provider and injected
	// headers; the remaining options stay flags.
	core := []string{
		"--redirect-url=" + front + "/oauth2/callback",
		"--email-domain=*",
		"--cookie-secure=false",
		"--skip-provider-button=true",
	}
	alpha := oauth2ProxyAlphaConfig(t, proxyBin, dir, proxySecret, append([]string{
		"--http-address=" + addr,
		"--upstream=" + up.URL + "/",
		"--provider=oidc",
		"--oidc-issuer-url=" + p.Issuer(),
		"--client-id=" + p.ClientID,
		"--client-secret-file=" + secretFile,
		"--scope=openid email profile groups",
		"--code-challenge-method=S256",
		"--pass-user-headers=true",
	}, core...))
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, proxyBin, append([]string{"--alpha-config=" + alpha}, core...)...)
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
	require.Equal(t, auth.MethodProxy, who.Method)
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
	require.NotContains(t, h.logs.String(), "CANARY", "the secret is never logged")
}
