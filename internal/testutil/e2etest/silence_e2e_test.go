package e2etest

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
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

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestSeverityRulesAndSilences drives real drift through a real daemon:
// a severity rule makes a content change critical (shown with the rule in
// the API), a pager route with min_severity hears only that; a silence
// holds every message through a daemon restart and, expired, sends one
// update with what changed while it held; a maintenance window holds a
// second workspace's open until the window is gone from the config.
func TestSeverityRulesAndSilences(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	files := func(name string) map[string]string {
		return map[string]string{"main.tf": providers + fmt.Sprintf(`
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/%[1]s-a.txt"
  content  = "v1"
}
resource "dwtest_file" "b" {
  filename = "@ROOT@/out/%[1]s-b.txt"
  content  = "v1"
}
`, name)}
	}
	pay := e.workspace(t, "payments", files("payments"))
	e.apply(t, pay)
	bill := e.workspace(t, "billing", files("billing"))
	e.apply(t, bill)

	hook, pager := notifytest.NewWebhookServer(t, ""), notifytest.NewWebhookServer(t, "")
	caFile := filepath.Join(e.root, "ca.pem")
	var pems []byte
	for _, s := range []*notifytest.WebhookServer{hook, pager} {
		pems = append(pems, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})...)
	}
	require.NoError(t, os.WriteFile(caFile, pems, 0o644))
	token := "dw-api-token-CANARY-5ilence-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	listen := freePort(t)
	config := func(window string) string {
		return e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
allow_sub_minute_schedules: true
notifiers:
  - { name: hook, type: webhook, webhook: { url_file: %s, secret_file: %s }, ca_file: %s }
  - { name: pager, type: webhook, webhook: { url_file: %s, secret_file: %s }, ca_file: %s }
alerts:
  routes:
    - match: { labels: { tier: prod } }
      notifiers: [pager]
      min_severity: critical
      continue: true
    - notifiers: [hook]
  severity_rules:
    - name: content-drift
      severity: critical
      match: { resource_types: ["dwtest_*"], attributes: ["content"] }
%s
defaults: { schedule: "@every 2s" }
workspaces:
  - { name: payments, source: { path: ./payments }, labels: { tier: prod } }
  - { name: billing, source: { path: ./billing } }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"), hook.URLFile, hook.SecretFile, caFile,
			pager.URLFile, pager.SecretFile, caFile, window))
	}
	window := `maintenance_windows:
  - { name: freeze, schedule: "* * * * *", duration: 2h, match: { workspaces: [billing] } }`
	cfg := config(window)
	d := startDaemon(t, cfg, listen)
	d.eventually("clean runs", 60*time.Second, func() bool {
		ws := d.workspaces()
		return ws["payments"].Status == "clean" && ws["billing"].Status == "clean"
	})
	deliveries := func(s *notifytest.WebhookServer, ws string) []notifytest.WebhookPayload {
		var outp []notifytest.WebhookPayload
		for _, dl := range s.Deliveries() {
			if dl.Payload.Incident.Workspace == ws {
				outp = append(outp, dl.Payload)
			}
		}
		return outp
	}

	// 1. A content change: critical by the rule, to both notifiers.
	require.NoError(t, os.WriteFile(filepath.Join(out, "payments-a.txt"), []byte("hand edit"), 0o644))
	d.eventually("open delivered", 60*time.Second, func() bool {
		return len(deliveries(hook, "payments")) == 1 && len(deliveries(pager, "payments")) == 1
	})
	open := deliveries(pager, "payments")[0]
	require.Equal(t, "open", open.Event)
	require.Equal(t, "critical", open.Incident.Severity)
	var detail struct {
		Incidents []struct {
			Severity     string `json:"severity"`
			SeverityRule string `json:"severity_rule"`
		} `json:"incidents"`
	}
	d.getJSON("/api/v1/workspaces/payments", &detail)
	require.Len(t, detail.Incidents, 1)
	require.Equal(t, "critical", detail.Incidents[0].Severity)
	require.Equal(t, "content-drift", detail.Incidents[0].SeverityRule)

	// 2. Silence payments; the drift grows while silenced; the daemon
	// restarts in the middle: nothing is sent.
	code, body := d.send(http.MethodPost, "/api/v1/silences", "", `{"workspace":"payments","for":"1h","comment":"x"}`)
	require.Contains(t, []int{401, 403}, code, "a silence needs the token: %s", body)
	code, body = d.send(http.MethodPost, "/api/v1/silences", token,
		`{"workspace":"payments","for":"1h","comment":"firewall migration","created_by":"alice"}`)
	require.Equal(t, http.StatusCreated, code, body)
	var sil struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sil))
	require.NotEmpty(t, sil.ID)
	require.NoError(t, os.WriteFile(filepath.Join(out, "payments-b.txt"), []byte("hand edit"), 0o644))
	d.eventually("the update recorded", 60*time.Second, func() bool {
		f := d.workspaces()["payments"]
		return f.Counts.Drift == 2
	})
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	d = startDaemon(t, cfg, listen)
	runs := len(d.runs("payments"))
	d.eventually("more runs after the restart", 60*time.Second, func() bool { return len(d.runs("payments")) >= runs+3 })
	require.Len(t, deliveries(hook, "payments"), 1, "held while silenced, across a restart")
	require.Len(t, deliveries(pager, "payments"), 1)
	require.Contains(t, d.page("/silences"), "firewall migration")

	// 3. Expire it: one update per notifier, with what changed.
	code, body = d.send(http.MethodDelete, "/api/v1/silences/"+sil.ID, token, "")
	require.Equal(t, http.StatusOK, code, body)
	d.eventually("the collapsed update", 60*time.Second, func() bool {
		return len(deliveries(hook, "payments")) == 2 && len(deliveries(pager, "payments")) == 2
	})
	upd := deliveries(hook, "payments")[1]
	require.Equal(t, "update", upd.Event)
	require.Len(t, upd.Delta.Added, 1)
	require.Equal(t, "dwtest_file.b", upd.Delta.Added[0].Address)

	// 4. billing is in a maintenance window: its drift opens an incident
	// but pages nobody until the window is gone.
	require.NoError(t, os.WriteFile(filepath.Join(out, "billing-a.txt"), []byte("hand edit"), 0o644))
	d.eventually("billing drifted", 60*time.Second, func() bool { return d.workspaces()["billing"].Status == "drift" })
	runs = len(d.runs("billing"))
	d.eventually("more billing runs", 60*time.Second, func() bool { return len(d.runs("billing")) >= runs+2 })
	require.Empty(t, deliveries(hook, "billing"), "held by the window")
	config("") // the window ends: the daemon reloads its config
	d.eventually("billing's open released", 90*time.Second, func() bool { return len(deliveries(hook, "billing")) == 1 })
	require.Equal(t, "open", deliveries(hook, "billing")[0].Event)
	require.Empty(t, deliveries(pager, "billing"), "billing is not routed to the pager")
	for _, dl := range append(hook.Deliveries(), pager.Deliveries()...) {
		require.True(t, dl.Verified, dl.Reason)
		require.False(t, dl.Duplicate)
	}
	require.NotContains(t, d.logs.String(), token)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}

// send makes an API request with an optional bearer token and JSON body.
func (d *daemonProc) send(method, path, token, body string) (int, string) {
	d.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	require.NoError(d.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(d.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}
