package e2etest

import (
	"bufio"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// connectProxy is an HTTP CONNECT proxy on 127.0.0.1 that tunnels every
// request to target. The daemon reaches the OpsGenie test server through
// it (HTTPS_PROXY), so the notifier talks TLS to "api.example.com" as it
// would to the real API, and no byte leaves the machine.
func connectProxy(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			up.Close()
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := hj.Hijack()
		if err != nil {
			up.Close()
			return
		}
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = io.Copy(up, buf); up.Close() }()
		go func() { defer wg.Done(); _, _ = io.Copy(conn, up); conn.Close() }()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

// alertServers are local servers speaking Slack's, OpsGenie's (over TLS,
// reached through a CONNECT proxy as the real one would be) and a signed
// webhook's wire protocols, with the credential files a daemon reads.
type alertServers struct {
	slack *notifytest.SlackServer
	og    *notifytest.OpsGenieServer
	hook  *notifytest.WebhookServer
	// notifiers is the config's notifiers: block: slack-oncall (channel
	// C0DRIFT01), pager (OpsGenie) and hook (webhook).
	notifiers string
	// env is the daemon's environment (HTTPS_PROXY).
	env []string
}

func newAlertServers(t *testing.T, e *tfEnv) *alertServers {
	t.Helper()
	as := &alertServers{slack: notifytest.NewSlackServer(t), og: notifytest.NewOpsGenieServer(t), hook: notifytest.NewWebhookServer(t, "")}
	secrets := filepath.Join(e.root, "secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(secrets, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		return p
	}
	caFile := write("ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: as.og.Certificate().Raw})), 0o644)
	as.env = []string{"HTTPS_PROXY=" + connectProxy(t, strings.TrimPrefix(as.og.URL(), "https://"))}
	as.notifiers = fmt.Sprintf(`notifiers:
  - name: slack-oncall
    type: slack
    slack: { token_file: %s, channel: C0DRIFT01, api_url: "%s" }
  - name: pager
    type: opsgenie
    opsgenie: { api_key_file: %s, api_url: "https://%s" }
    ca_file: %s
  - name: hook
    type: webhook
    webhook: { url_file: %s, secret_file: %s }
    ca_file: %s`, write("slack-token", notifytest.SlackTestToken+"\n", 0o600), as.slack.APIURL(),
		write("og-key", as.og.APIKey+"\n", 0o600), notifytest.OpsGenieAPIURL, caFile, as.hook.URLFile, as.hook.SecretFile, caFile)
	return as
}

// TestAlerts drives real Terraform drift through a real daemon to local
// servers speaking Slack's, OpsGenie's and a webhook's wire protocols: one
// incident opened, updated when the drift changes, silent while unchanged,
// resolved when the drift is reverted; delivered exactly once across an
// outage and a daemon restart; no secret anywhere.
func TestAlerts(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	ws := e.workspace(t, "payments", map[string]string{
		"main.tf": providers + `
variable "secret" {
  type      = string
  sensitive = true
}
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
resource "dwtest_file" "b" {
  filename = "@ROOT@/out/b.txt"
  content  = "v1"
}
resource "dwtest_file" "s" {
  filename          = "@ROOT@/out/s.txt"
  sensitive_content = var.secret
}
`,
		"secret.tfvars": `secret = "` + canarySensitive + `"` + "\n",
	})
	e.apply(t, ws, "-var-file=secret.tfvars")

	as := newAlertServers(t, e)
	slackSrv, ogSrv, hookSrv := as.slack, as.og, as.hook

	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", external_url: "https://driftwatch.example.com" }
store: { path: %s }
allow_sub_minute_schedules: true
%s
alerts:
  default_notifiers: [slack-oncall, pager, hook]
  routes:
    - match: { labels: { tier: prod } }
      notifiers: [slack-oncall, pager, hook]
      team: payments-oncall
      severity: { drift: high }
workspaces:
  - name: payments
    source: { path: ./payments }
    var_files: [secret.tfvars]
    owner: team-payments
    labels: { tier: prod }
    schedule: "@every 2s"
`, listen, filepath.Join(e.root, "data", "dw.db"), as.notifiers))

	start := func() *daemonProc { return startDaemonEnv(t, cfg, listen, as.env) }
	d := start()

	// Clean runs open nothing.
	d.eventually("a clean run", 30*time.Second, func() bool { return d.workspaces()["payments"].Status == "clean" })
	require.Empty(t, slackSrv.Messages("C0DRIFT01"))

	// 1. Drift: one incident opened everywhere.
	require.NoError(t, os.WriteFile(filepath.Join(out, "a.txt"), []byte("hand edit"), 0o644))
	d.eventually("open delivered", 60*time.Second, func() bool {
		return len(slackSrv.Messages("C0DRIFT01")) == 1 && len(ogSrv.Alerts()) == 1 && len(hookSrv.Deliveries()) == 1
	})
	parent := slackSrv.Messages("C0DRIFT01")[0]
	require.Contains(t, string(parent.Blocks), "dwtest_file.a")
	require.Contains(t, string(parent.Blocks), "https://driftwatch.example.com/workspaces/payments")
	alert := ogSrv.Alerts()[0]
	require.Equal(t, "open", alert.Status)
	require.Equal(t, "P2", alert.Priority, "route severity high")
	require.Equal(t, "payments", alert.Entity)
	require.Equal(t, []notifytest.OpsGenieResponder{{Type: "team", Name: "payments-oncall"}}, alert.Responders)
	open := hookSrv.Deliveries()[0]
	require.True(t, open.Verified, open.Reason)
	require.Equal(t, "open", open.Payload.Event)
	require.Equal(t, "drift", open.Payload.Incident.Class)
	require.Equal(t, "dwtest_file.a", open.Payload.Incident.Findings[0].Address)

	// Unchanged drift, several runs later: nothing new is sent.
	runs := len(d.runs("payments"))
	d.eventually("three more runs", 30*time.Second, func() bool { return len(d.runs("payments")) >= runs+3 })
	require.Len(t, slackSrv.Messages("C0DRIFT01"), 1)
	require.Len(t, hookSrv.Deliveries(), 1)
	require.Empty(t, slackSrv.RequestsFor("chat.update"))

	// 2. The drift grows (b and the sensitive one): one update.
	require.NoError(t, os.WriteFile(filepath.Join(out, "b.txt"), []byte("hand edit"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "s.txt"), []byte(canaryDrifted), 0o644))
	d.eventually("update delivered", 60*time.Second, func() bool {
		return len(hookSrv.Deliveries()) == 2 && len(slackSrv.Replies("C0DRIFT01", parent.TS)) == 1 && len(ogAlertNotes(ogSrv)) == 1
	})
	upd := hookSrv.Deliveries()[1].Payload
	require.Equal(t, "update", upd.Event)
	require.Len(t, upd.Delta.Added, 2)
	require.Len(t, slackSrv.Messages("C0DRIFT01"), 1, "still one parent message, updated in place")
	require.GreaterOrEqual(t, slackSrv.Messages("C0DRIFT01")[0].Edits, 1)

	// 3. Slack is down when the drift is reverted; the daemon restarts
	// during the outage; the resolve is delivered exactly once afterwards.
	slackSrv.Down()
	require.NoError(t, os.WriteFile(filepath.Join(out, "a.txt"), []byte("v1"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "b.txt"), []byte("v1"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "s.txt"), []byte(canarySensitive), 0o644))
	d.eventually("resolved elsewhere", 60*time.Second, func() bool {
		a, _ := ogSrv.Alert(alert.Alias)
		return a.Status == "closed" && len(hookSrv.Deliveries()) == 3
	})
	require.Equal(t, "resolve", hookSrv.Deliveries()[2].Payload.Event)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	slackSrv.Up()
	d = start()
	d.eventually("slack resolve delivered after restart", 60*time.Second, func() bool {
		return len(slackSrv.Replies("C0DRIFT01", parent.TS)) == 2
	})
	time.Sleep(3 * time.Second) // a few more clean runs: nothing else may arrive
	require.Len(t, slackSrv.Messages("C0DRIFT01"), 1, "never a second parent")
	require.Len(t, slackSrv.Replies("C0DRIFT01", parent.TS), 2, "resolve delivered exactly once")
	require.Len(t, hookSrv.Deliveries(), 3)
	for _, dl := range hookSrv.Deliveries() {
		require.False(t, dl.Duplicate)
	}
	require.Len(t, ogSrv.Alerts(), 1)
	require.Equal(t, 1, ogSrv.Alerts()[0].Count, "one create, never a duplicate alert")

	// Secrets: no canary or credential in any request, log or metric.
	var wire strings.Builder
	for _, r := range slackSrv.Requests() {
		fmt.Fprintf(&wire, "%v %v\n", r.Form, r.JSON)
	}
	for _, m := range slackSrv.Messages("C0DRIFT01") {
		fmt.Fprintf(&wire, "%s\n", m.Blocks)
	}
	for _, r := range ogSrv.Requests() {
		wire.Write(r.Body)
	}
	for _, dl := range hookSrv.Deliveries() {
		wire.Write(dl.Body)
	}
	metrics := d.getText("/metrics")
	require.Contains(t, metrics, `driftwatch_notifications_total{notifier="slack-oncall",result="delivered"}`)
	for _, s := range []string{canarySensitive, canaryDrifted, notifytest.SlackTestToken, ogSrv.APIKey, hookSrv.Secret, hookSrv.URL} {
		require.NotContains(t, wire.String(), s)
		require.NotContains(t, d.logs.String(), s)
		require.NotContains(t, metrics, s)
	}
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}

func ogAlertNotes(s *notifytest.OpsGenieServer) []string {
	var notes []string
	for _, a := range s.Alerts() {
		notes = append(notes, a.Notes...)
	}
	return notes
}

func (d *daemonProc) getText(path string) string {
	d.t.Helper()
	resp, err := http.Get(d.base + path)
	require.NoError(d.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}
