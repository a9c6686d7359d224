package e2etest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestRemediationTurnedOff: a config reload that turns a workspace's
// remediation off ends its pending proposal (expired) and its approved,
// not yet applied remediation (refused), with the reason; approving
// afterwards is refused (409, naming why); nothing is applied, not even
// after the kill switch is released. A reload from approve to auto ends
// nothing.
func TestRemediationTurnedOff(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	out := filepath.Join(e.root, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "state"), 0o755))
	names := []string{"offpend", "offappr", "stays"}
	dirs := map[string]string{}
	file := func(n string) string { return filepath.Join(out, n+".txt") }
	for _, n := range names {
		dirs[n] = e.workspace(t, n, map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, n, "")})
		e.apply(t, dirs[n])
		require.NoError(t, os.WriteFile(file(n), []byte("hand edit"), 0o644))
	}
	token := "dw-remediation-token-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	listen := freePort(t)
	config := func(modes map[string]string) string {
		body := fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
max_concurrent_runs: 3
allow_sub_minute_schedules: true
defaults:
  schedule: "@every 3s"
  backend_policy: { allow_local: true }
workspaces:
`, listen, tokenFile, filepath.Join(e.root, "dw.db"))
		for _, n := range names {
			body += fmt.Sprintf("  - name: %s\n    source: { path: %s }\n    remediation: { mode: %s }\n", n, dirs[n], modes[n])
		}
		return e.config(t, body)
	}
	cfg := config(map[string]string{"offpend": "approve", "offappr": "approve", "stays": "approve"})
	d := startDaemon(t, cfg, listen)

	pend := d.waitRemediation("offpend", 60*time.Second, "pending")
	appr := d.waitRemediation("offappr", 60*time.Second, "pending")
	stays := d.waitRemediation("stays", 60*time.Second, "pending")
	// offappr: approved while the kill switch holds it, so it waits.
	require.Equal(t, 200, d.post("/api/v1/remediation/pause", token))
	require.Equal(t, 200, d.post("/api/v1/remediations/"+appr.ID+"/approve", token))

	config(map[string]string{"offpend": "off", "offappr": "off", "stays": "auto"})
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))

	const reason = "remediation turned off by config reload"
	r := d.waitRemediation("offpend", 30*time.Second, "expired")
	require.Equal(t, pend.ID, r.ID)
	require.Equal(t, reason, r.Reason)
	r = d.waitRemediation("offappr", 30*time.Second, "refused")
	require.Equal(t, appr.ID, r.ID)
	require.Equal(t, reason, r.Reason)
	var outcome struct {
		Result       string       `json:"result"`
		ApplyStarted bool         `json:"apply_started"`
		Refusals     []apiRefusal `json:"refusals"`
	}
	require.NoError(t, json.Unmarshal(r.Outcome, &outcome), "%s", r.Outcome)
	require.Equal(t, "refused", outcome.Result)
	require.False(t, outcome.ApplyStarted)
	require.Equal(t, []apiRefusal{{Code: "remediation_off", Reason: reason}}, outcome.Refusals)

	// Approving is refused with the reason, through the API and the CLI.
	require.Equal(t, 409, d.post("/api/v1/remediations/"+pend.ID+"/approve", token))
	res := driftwatch(t, nil, "approve", pend.ID, "--server", d.base, "--token-file", tokenFile)
	require.NotEqual(t, 0, res.code)
	require.Contains(t, res.stderr, "409 Conflict")
	require.Contains(t, res.stderr, "remediation for workspace offpend is off (config)")

	// Released kill switch, several detection runs: nothing applies,
	// nothing new is proposed; approve to auto ended nothing.
	require.Equal(t, 200, d.post("/api/v1/remediation/resume", token))
	time.Sleep(7 * time.Second)
	for _, n := range []string{"offpend", "offappr"} {
		require.Equal(t, "hand edit", mustRead(t, file(n)), n)
		require.Len(t, d.remediations(n), 1, n)
	}
	var x apiRemediation
	d.getJSON("/api/v1/remediations/"+stays.ID, &x)
	require.Equal(t, "pending", x.State)
	require.Equal(t, "hand edit", mustRead(t, file("stays")))
}
