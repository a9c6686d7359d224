package e2etest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// A workspace's code cannot act as anyone: the daemon runs in proxy mode
// behind a real oauth2-proxy on the same host, trusting 127.0.0.1, and the
// workspace's code
// (a data source that runs a program during plan) sends forged identity
// headers to every address and port of the host it can name: the daemon
// and the proxy on loopback, the host's other address, a loopback port not listed in
// sandbox_host_ports. Nothing answers; a host elsewhere on the network (a
// namespace of the test's own) does, and so does the loopback port the
// workspace lists. The run itself succeeds, and no forged name is in the
// audit log.
func TestJailNetDaemon(t *testing.T) {
	parallel(t)
	tftest.JailNet(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		h := tftest.NewNetHost(t)
		remote := tftest.ServeHello(t, h.Listen(t, h.RemoteAddr+":0"), "remote")
		listed := tftest.ServeHello(t, tftest.ListenTCP(t, "127.0.0.1:0"), "listed")
		unlisted := tftest.ServeHello(t, tftest.ListenTCP(t, "127.0.0.1:0"), "unlisted")
		other := tftest.ServeHello(t, tftest.ListenTCP(t, h.HostAddr+":0"), "host-other-address")

		listen := freePort(t)
		_, daemonPort, _ := net.SplitHostPort(listen)
		const proxySecret = "proxy-secret-0123456789abcdef0123456789"
		secretFile := filepath.Join(e.root, "proxy-secret")
		require.NoError(t, os.WriteFile(secretFile, []byte(proxySecret), 0o600))
		front := startOAuth2Proxy(t, "http://"+listen)

		var probe strings.Builder
		probe.WriteString("out=@ROOT@/probe.out\n: > \"$out\"\n")
		for _, a := range []string{listen, front, "[::1]:" + daemonPort, h.HostAddr + ":" + daemonPort, other, unlisted, listed, remote} {
			host, port, _ := net.SplitHostPort(a)
			fmt.Fprintf(&probe, `if exec 3<>/dev/tcp/%s/%s; then
  printf 'GET /api/v1/whoami HTTP/1.0\r\nHost: %s\r\nX-Forwarded-User: mallory\r\nX-Forwarded-Groups: platform\r\n\r\n' >&3
  echo "%s $(head -n1 <&3 | tr -d '\r')" >> "$out"; exec 3<&-
else echo "%s refused" >> "$out"; fi
`, host, port, listen, a, a)
		}
		e.workspace(t, "probe", map[string]string{
			"probe.sh": probe.String(),
			"main.tf": `
data "local_command" "probe" {
  command   = "/usr/bin/bash"
  arguments = ["-c", file("${path.module}/probe.sh")]
}
resource "terraform_data" "x" {
  input = data.local_command.probe.exit_code
}
`})
		_, listedPort, _ := net.SplitHostPort(listed)
		cfg := e.config(t, fmt.Sprintf(`
server:
  listen: "%s"
  auth:
    mode: proxy
    anonymous_role: viewer
    proxy: { trusted_networks: [127.0.0.1/32], secret_file: %s }
    roles: [{ role: admin, groups: [platform] }]
store: { path: %s }
workspaces:
  - name: probe
    source: { path: ./probe }
    sandbox_host_ports: ["127.0.0.1:%s"]
`, listen, secretFile, filepath.Join(e.root, "data", "dw.db"), listedPort))
		d := startDaemon(t, cfg, listen)
		d.eventually("the probe's run", 120*time.Second, func() bool {
			r := d.runs("probe")
			return len(r) == 1 && r[0].Status != "running" && r[0].Status != "queued"
		})
		require.Equal(t, "pending", d.runs("probe")[0].Status, d.runs("probe")[0].Error)

		require.Equal(t, strings.Join([]string{
			listen + " refused",
			front + " refused",
			"[::1]:" + daemonPort + " refused",
			h.HostAddr + ":" + daemonPort + " refused",
			other + " refused",
			unlisted + " refused",
			listed + " hello from listed",
			remote + " hello from remote",
		}, "\n")+"\n", mustRead(t, filepath.Join(e.root, "probe.out")))

		var st struct {
			Sandbox struct{ Mode, Network, NetworkReason string } `json:"sandbox"`
		}
		d.getJSON("/api/v1/status", &st)
		require.Equal(t, "isolated", st.Sandbox.Network, st.Sandbox.NetworkReason)

		// The same forged headers from this host, without the proxy's
		// secret, name nobody; with it they do: the proxy path works.
		whoami := func(secret string) string {
			req, _ := http.NewRequest(http.MethodGet, d.base+"/api/v1/whoami", nil)
			req.Header.Set("X-Forwarded-User", "mallory")
			req.Header.Set("X-Forwarded-Groups", "platform")
			if secret != "" {
				req.Header.Set("X-Driftwatch-Proxy-Secret", secret)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		// Through the proxy, the forged headers get a sign-in, not an identity.
		req, _ := http.NewRequest(http.MethodGet, "http://"+front+"/api/v1/whoami", nil)
		req.Header.Set("X-Forwarded-User", "mallory")
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode, "%s", b)
		require.NotContains(t, string(b), "mallory")
		require.NotContains(t, whoami(""), "mallory")
		require.Contains(t, whoami(proxySecret), `"mallory"`)
		require.NotContains(t, d.logs.String(), proxySecret)
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	})
}

// startOAuth2Proxy starts a real oauth2-proxy (DRIFTWATCH_OAUTH2_PROXY,
// `make auth-tools`) on 127.0.0.1 in front of upstream and returns its
// address. Its OpenID Connect provider's endpoints are closed local ports:
// nobody signs in, so every request it answers is a sign-in.
func startOAuth2Proxy(t *testing.T, upstream string) string {
	t.Helper()
	bin := os.Getenv("DRIFTWATCH_OAUTH2_PROXY")
	if bin == "" {
		tftest.Unavailable(t, "oauth2-proxy not provisioned (DRIFTWATCH_OAUTH2_PROXY); run `make auth-tools`")
	}
	addr := freePort(t)
	closed := "http://127.0.0.1:1"
	cmd := exec.Command(bin, "--http-address="+addr, "--upstream="+upstream+"/",
		"--provider=oidc", "--skip-oidc-discovery", "--oidc-issuer-url="+closed,
		"--login-url="+closed+"/auth", "--redeem-url="+closed+"/token", "--oidc-jwks-url="+closed+"/jwks",
		"--client-id=driftwatch", "--client-secret=unused-client-secret", "--email-domain=*",
		"--cookie-secure=false", "--redirect-url=http://"+addr+"/oauth2/callback", "--pass-user-headers=true")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OAUTH2_PROXY_COOKIE_SECRET=0123456789abcdef0123456789abcdef"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "oauth2-proxy did not listen: %s", &out)
	return addr
}
