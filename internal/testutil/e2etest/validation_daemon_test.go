package e2etest

import (
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestDaemonValidationIncident: a check block reading a file Terraform
// manages passes, then fails when the file is edited behind Terraform's
// back (drift and a failing check on the same real content), then passes
// again once the file is restored: the daemon opens a validation incident
// beside the drift incident and resolves both, one message each, with
// the check's message and no value beyond it.
func TestDaemonValidationIncident(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	ws := e.workspace(t, "orders", map[string]string{"main.tf": providers + `
resource "dwtest_file" "motd" {
  filename = "@ROOT@/out/motd.txt"
  content  = "v1"
}
check "motd_is_managed" {
  # Read at plan time (no depends_on: a dependency with a planned
  # change would defer the read and leave the check unknown).
  data "local_file" "motd" {
    filename = "@ROOT@/out/motd.txt"
  }
  assert {
    condition     = data.local_file.motd.content == "v1"
    error_message = "motd.txt is not the managed text"
  }
}
`})
	e.apply(t, ws)

	hook := notifytest.NewWebhookServer(t, "")
	caFile := filepath.Join(e.root, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}), 0o644))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
allow_sub_minute_schedules: true
notifiers:
  - { name: hook, type: webhook, webhook: { url_file: %s, secret_file: %s }, ca_file: %s }
alerts:
  default_notifiers: [hook]
  severity: { validation: high }
workspaces:
  - { name: orders, source: { path: ./orders }, schedule: "@every 2s" }
`, listen, filepath.Join(e.root, "data", "dw.db"), hook.URLFile, hook.SecretFile, caFile))
	d := startDaemon(t, cfg, listen)
	d.eventually("a clean run (the check passes)", 60*time.Second, func() bool { return d.workspaces()["orders"].Status == "clean" })
	require.Empty(t, hook.Deliveries())

	events := func() map[string][]string {
		got := map[string][]string{}
		for _, dl := range hook.Deliveries() {
			got[dl.Payload.Incident.Class] = append(got[dl.Payload.Incident.Class], dl.Payload.Event)
		}
		return got
	}
	require.NoError(t, os.WriteFile(filepath.Join(out, "motd.txt"), []byte("hand edit"), 0o644))
	d.eventually("drift and validation incidents open", 60*time.Second, func() bool {
		ev := events()
		return len(ev["drift"]) == 1 && len(ev["validation"]) == 1
	})
	for _, dl := range hook.Deliveries() {
		require.True(t, dl.Verified, dl.Reason)
		if dl.Payload.Incident.Class != "validation" {
			continue
		}
		inc := dl.Payload.Incident
		require.Equal(t, "open", dl.Payload.Event)
		require.Equal(t, "high", inc.Severity, "alerts.severity.validation")
		require.Len(t, inc.Findings, 1)
		f := inc.Findings[0]
		require.Equal(t, "check.motd_is_managed", f.Address)
		require.Equal(t, "fail", f.Action)
		require.Equal(t, "motd.txt is not the managed text", f.Detail)
		require.NotContains(t, string(dl.Body), "hand edit", "the file's content is a value: never sent")
	}
	require.Equal(t, "drift", d.workspaces()["orders"].Status, "drift outranks validation")

	require.NoError(t, os.WriteFile(filepath.Join(out, "motd.txt"), []byte("v1"), 0o644))
	d.eventually("both resolved", 60*time.Second, func() bool {
		ev := events()
		return len(ev["drift"]) == 2 && len(ev["validation"]) == 2
	})
	require.Equal(t, map[string][]string{"drift": {"open", "resolve"}, "validation": {"open", "resolve"}}, events())
	require.Equal(t, "clean", d.workspaces()["orders"].Status)
	require.NotContains(t, d.logs.String(), "hand edit")
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}
