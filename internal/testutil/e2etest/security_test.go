package e2etest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
)

// What a run log shows, and to whom, on a real daemon with real Terraform:
// no attribute value (here one not marked sensitive) in any log by
// default, logs and run pages only to a reader with a credential, the full
// plan text only where a workspace opts in, and no request with a foreign
// Host header.
func TestRunLogAccessAndValues(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		const plainCanary = "CANARY-attr-not-sensitive-4b1"
		const optinCanary = "CANARY-attr-opted-in-8e2"
		e.workspace(t, "plain", map[string]string{"main.tf": `
variable "api_key" { type = string }
resource "terraform_data" "x" {
  input = "` + plainCanary + `"
}
resource "terraform_data" "k" {
  input = var.api_key
}
`})
		e.workspace(t, "optin", map[string]string{"main.tf": `
resource "terraform_data" "x" {
  input = "` + optinCanary + `"
}
`})
		token := "dw-api-token-sec-3c9-0123456789abcdef0123456789"
		tokenFile := filepath.Join(e.root, "api-token")
		require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
		listen := freePort(t)
		cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
workspaces:
  - name: plain
    source: { path: ./plain }
    vars: { api_key: "CANARY-var-api-key-71d" }
  - name: optin
    source: { path: ./optin }
    log_plan_text: true
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db")))
		d := startDaemon(t, cfg, listen)
		var plainRun, optinRun string
		// The initial runs: a daemon started just before the hour also
		// runs the hourly schedule's, which the test does not read.
		initial := func(ws string) (string, bool) {
			for _, r := range d.runs(ws) {
				if r.Trigger == "initial" {
					return r.ID, r.Status == "pending"
				}
			}
			return "", false
		}
		d.eventually("initial runs done", 120*time.Second, func() bool {
			var pDone, oDone bool
			plainRun, pDone = initial("plain")
			optinRun, oDone = initial("optin")
			return pDone && oDone
		})

		get := func(path, auth, host string) (int, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, d.base+path, nil)
			// The run's record is finished a moment before its live log
			// stops answering: without this a read in between is the
			// event stream (docs/api.md).
			req.Header.Set("Accept", "text/plain, text/html")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			if host != "" {
				req.Host = host
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		bearer := "Bearer " + token

		for _, p := range []string{"/api/v1/runs/" + plainRun + "/logs", "/runs/" + plainRun} {
			code, _ := get(p, "", "")
			require.Equal(t, http.StatusUnauthorized, code, "%s without a credential", p)
			code, _ = get(p, "Bearer wrong-token", "")
			require.Equal(t, http.StatusUnauthorized, code, "%s with a wrong credential", p)
		}
		code, log := get("/api/v1/runs/"+plainRun+"/logs", bearer, "")
		require.Equal(t, http.StatusOK, code, log)
		require.Contains(t, log, "plan   +   create  terraform_data.x")
		require.Contains(t, log, "create  terraform_data.k")
		require.NotContains(t, log, plainCanary, "no attribute value, sensitive or not")
		require.NotContains(t, log, "CANARY-var-api-key-71d")
		code, page := get("/runs/"+plainRun, bearer, "")
		require.Equal(t, http.StatusOK, code)
		require.NotContains(t, page, plainCanary)

		// Opted in: the plan text with its values, behind the notice, to
		// an authenticated reader only; secrets still redacted.
		code, _ = get("/api/v1/runs/"+optinRun+"/logs", "", "")
		require.Equal(t, http.StatusUnauthorized, code)
		code, log = get("/api/v1/runs/"+optinRun+"/logs", bearer, "")
		require.Equal(t, http.StatusOK, code)
		require.True(t, runlog.HoldsValues([]byte(log)), log)
		require.Contains(t, log, optinCanary)
		require.NotContains(t, log, token)

		// DNS rebinding: a page served from a foreign name is refused.
		for _, p := range []string{"/api/v1/workspaces", "/", "/api/v1/runs/" + plainRun + "/logs"} {
			code, _ = get(p, bearer, "attacker.example:"+strings.Split(listen, ":")[1])
			require.Equal(t, http.StatusMisdirectedRequest, code, p)
		}
		code, _ = get("/api/v1/workspaces", "", "localhost:"+strings.Split(listen, ":")[1])
		require.Equal(t, http.StatusOK, code)

		// The runs were jailed (make deps installs bubblewrap).
		var st struct {
			Sandbox struct{ Mode, Reason string } `json:"sandbox"`
		}
		d.getJSON("/api/v1/status", &st)
		require.Equal(t, "namespaces", st.Sandbox.Mode, st.Sandbox.Reason)

		require.NotContains(t, d.logs.String(), plainCanary)
		require.NotContains(t, d.logs.String(), token)
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	})
}
