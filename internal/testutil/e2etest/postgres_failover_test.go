package e2etest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestPostgresFailover runs two daemons on one PostgreSQL store, as two
// replicas of the chart would without the Kubernetes Lease: one leads
// (the database's leadership lock), the other serves reads and is not
// ready. kill -9 of the leader in the middle of a run: the standby leads
// within seconds, records the killed run errored, checks the workspace
// again, and the drift's incident is opened (paged) exactly once.
func TestPostgresFailover(t *testing.T) {
	parallel(t)
	dsn := pgtest.Database(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))
	ws := e.workspace(t, "slow", map[string]string{"main.tf": providers + `
data "dwtest_sleep" "slow" {
  duration = "10s"
}
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`})
	e.apply(t, ws)
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "a.txt"), []byte("hand edit"), 0o644))
	hook, alerts := webhookAlerts(t, e)
	r := newReplicaConfigs(t, e, dsn, alerts+`
defaults:
  schedule: "@hourly"
  backend_policy: { allow_local: true }
workspaces:
  - { name: slow, source: { path: ./slow } }
`)

	a := startDaemon(t, r.cfgA, r.listenA)
	b := startDaemonProbe(t, r.cfgB, r.listenB, nil, "/healthz")
	require.Equal(t, http.StatusServiceUnavailable, probeStatus(t, b, "/readyz"), "the second replica is a standby")
	var killed string
	a.eventually("the leader's run of slow in its plan", 60*time.Second, func() bool {
		runs := a.runs("slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			killed = runs[0].ID
			return true
		}
		return false
	})
	require.Equal(t, killed, b.runs("slow")[0].ID, "the standby reads the same store")
	start := time.Now()
	a.stop(syscall.SIGKILL, 10*time.Second)
	b.eventually("the standby leads", 30*time.Second, func() bool { return probeStatus(t, b, "/readyz") == http.StatusOK })
	t.Logf("leader killed to standby ready: %s", time.Since(start).Round(time.Millisecond))
	b.eventually("the workspace checked again by the new leader", 90*time.Second, func() bool {
		return b.workspaces()["slow"].Status == "drift"
	})
	runs := b.runs("slow")
	require.Len(t, runs, 2, "the killed run and the new leader's")
	var old apiRun
	for _, r := range runs {
		if r.ID == killed {
			old = r
		}
	}
	require.Equal(t, "errored", old.Status, "the killed run is recorded, not left running")
	require.Contains(t, old.Error, "restarted")

	b.eventually("the drift paged", 30*time.Second, func() bool { return len(opens(hook, "slow")) == 1 })
	time.Sleep(3 * time.Second) // a second delivery would come within the outbox's first retry
	require.Len(t, opens(hook, "slow"), 1, "opened once: neither lost nor doubled by the failover")
	require.NotContains(t, b.logs.String(), dsn, "the DSN is a secret")
	require.Contains(t, b.logs.String(), `"store":"postgres (store.dsn_file)"`, "the start line names the store without its DSN")
}

// replicaConfigs are the config files of two replicas on one PostgreSQL
// database, the same but for their listen addresses.
type replicaConfigs struct {
	cfgA, cfgB, listenA, listenB string
}

// newReplicaConfigs writes them: the store (dsn, read from a dsn_file),
// then rest.
func newReplicaConfigs(t *testing.T, e *tfEnv, dsn, rest string) replicaConfigs {
	t.Helper()
	dsnFile := filepath.Join(e.root, "pg.dsn")
	require.NoError(t, os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o600))
	r := replicaConfigs{listenA: freePort(t), listenB: freePort(t)}
	body := fmt.Sprintf("\nstore: { driver: postgres, dsn_file: %s }\n", dsnFile) + rest
	r.cfgA = e.config(t, fmt.Sprintf("server: { listen: %q }", r.listenA)+body)
	raw, err := os.ReadFile(r.cfgA)
	require.NoError(t, err)
	r.cfgB = filepath.Join(e.root, "driftwatch-b.yaml")
	require.NoError(t, os.WriteFile(r.cfgB, []byte(strings.Replace(string(raw), r.listenA, r.listenB, 1)), 0o644))
	return r
}

// opens are the webhook's verified "open" deliveries for workspace.
func opens(hook *notifytest.WebhookServer, workspace string) []notifytest.WebhookDelivery {
	var out []notifytest.WebhookDelivery
	for _, d := range hook.Deliveries() {
		if d.Verified && !d.Duplicate && d.Payload.Event == "open" && d.Payload.Incident.Workspace == workspace {
			out = append(out, d)
		}
	}
	return out
}
