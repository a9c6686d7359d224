//go:build faults

package e2etest

import (
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// soakDuration is how long TestFaultsSoak drives drift:
// DRIFTWATCH_SOAK_DURATION (a Go duration), 10 minutes by default.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("DRIFTWATCH_SOAK_DURATION")
	if v == "" {
		return 10 * time.Minute
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "DRIFTWATCH_SOAK_DURATION")
	return d
}

const (
	soakWorkspaces = 200
	soakDrifters   = 20 // every 10th workspace flips between drift and clean
)

// TestFaultsSoak: 200 workspaces on a one-minute cadence for
// DRIFTWATCH_SOAK_DURATION (3 minutes under `make test`, 10 under `make
// test-faults`), a tenth of them
// drifting and healing at random behind Terraform's back, while the
// webhook receiver fails a fifth of its requests at random (500, 503, 429
// with Retry-After, dropped connections; never more than two in a row).
// Then the drift stops changing, the daemon settles and stops, and:
//   - every notification the outbox holds reached the receiver exactly
//     once (no duplicate delivery id, none given up, none pending), and
//     each incident's in the order it was enqueued;
//   - every incident reads as its workspace's files say (open while drifted,
//     resolved when healed), and each "open" was followed by nothing but
//     updates until its "resolve";
//   - no run is left running or queued, every workspace has runs, skipped
//     slots are counted instead of piling up, and the store passes
//     PRAGMA integrity_check, with the API's counts equal to the tables'.
//
// The figures (runs, skipped slots, deliveries, injected failures, losses)
// are logged for docs/reliability.md.
func TestFaultsSoak(t *testing.T) {
	t.Parallel() // the other fault tests run beside it: see parallelBesideSoak
	dur := soakDuration(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	for _, d := range []string{"out", "state"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	names := make([]string, soakWorkspaces)
	var drifters []string
	var wsYAML strings.Builder
	for i := range names {
		names[i] = fmt.Sprintf("ws-%03d", i)
		fmt.Fprintf(&wsYAML, "  - { name: %s, source: { path: ./%s } }\n", names[i], names[i])
		if i%(soakWorkspaces/soakDrifters) != 0 {
			// Quiet: a configuration with nothing in it, checked all the same.
			e.workspace(t, names[i], map[string]string{"main.tf": "terraform {}\n"})
			continue
		}
		drifters = append(drifters, names[i])
		dir := e.workspace(t, names[i], map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, names[i], fmt.Sprintf(`resource "dwtest_file" "b" {
  filename = "@ROOT@/out/%s-b.txt"
  content  = "v1"
}
`, names[i]))})
		e.apply(t, dir)
	}
	hook := notifytest.NewWebhookServer(t, "")
	caFile := filepath.Join(e.root, "hook-ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}), 0o644))
	listen := freePort(t)
	dbPath := filepath.Join(e.root, "data", "dw.db")
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
max_concurrent_runs: 4
defaults:
  schedule: "* * * * *"
  jitter: 50s
  backend_policy: { allow_local: true }
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: %s, secret_file: %s }
    ca_file: %s
    timeout: 5s
alerts: { default_notifiers: [hook] }
workspaces:
%s`, listen, dbPath, hook.URLFile, hook.SecretFile, caFile, wsYAML.String()))

	fileA := func(ws string) string { return filepath.Join(e.root, "out", ws+".txt") } // remediationWorkspace's resource a
	fileB := func(ws string) string { return filepath.Join(e.root, "out", ws+"-b.txt") }
	hook.Flaky(0.2, 2, 1)
	start := time.Now()
	d := startDaemon(t, cfg, listen)

	// Drift and heal at random, every 45 s, until the time is up.
	rng := rand.New(rand.NewSource(7))
	edits := 0
	drifted := map[string]bool{}
	for time.Since(start) < dur {
		for _, ws := range drifters {
			switch rng.Intn(4) {
			case 0: // heal
				require.NoError(t, os.WriteFile(fileA(ws), []byte("v1"), 0o644))
				require.NoError(t, os.WriteFile(fileB(ws), []byte("v1"), 0o644))
				drifted[ws] = false
			case 1:
				require.NoError(t, os.WriteFile(fileA(ws), []byte(fmt.Sprintf("hand edit %d", edits)), 0o644))
				drifted[ws] = true
			case 2:
				require.NoError(t, os.WriteFile(fileB(ws), []byte(fmt.Sprintf("hand edit %d", edits)), 0o644))
				drifted[ws] = true
			default: // as it is
				continue
			}
			edits++
		}
		d.sleep(min(45*time.Second, time.Until(start.Add(dur))))
	}
	injected := hook.FlakyFailures()
	hook.Flaky(0, 0, 0)
	settled := time.Now()

	// Settle: every workspace checked again after the last edit and
	// reading as its files say, the outbox empty.
	before := map[string]string{}
	for n, w := range d.workspaces() {
		before[n] = w.LastRunID
	}
	for {
		ws, done := d.workspaces(), true
		for _, n := range names {
			want := "clean"
			if drifted[n] {
				want = "drift"
			}
			if ws[n].LastRunID == before[n] || ws[n].Status != want {
				done = false
				break
			}
		}
		if done && d.metric(`driftwatch_notifications_pending{notifier="hook"}`) == 0 {
			break
		}
		require.Less(t, time.Since(settled), 5*time.Minute, "the daemon settles within 5 minutes of the last edit")
		d.sleep(2 * time.Second)
	}
	settleTook := time.Since(settled)
	// Quiesce before counting: a reload moves every workspace to a yearly
	// schedule, and the runs in flight and queued finish.
	body := mustRead(t, cfg)
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(body, `schedule: "* * * * *"`, `schedule: "@yearly"`, 1)), 0o644))
	for d.metric("driftwatch_active_runs") != 0 || d.metric("driftwatch_queue_depth") != 0 || !strings.Contains(d.logs.String(), `"msg":"config reloaded"`) {
		require.Less(t, time.Since(settled), 8*time.Minute, "the daemon goes quiet after the reload")
		d.sleep(time.Second)
	}
	finished := d.metricSum("driftwatch_runs_total{")
	skipped := d.metricSum("driftwatch_runs_skipped_total{")
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))

	// The store, read as it was left.
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var integrity string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity))
	require.Equal(t, "ok", integrity)
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, db.QueryRow(q, args...).Scan(&n), q)
		return n
	}
	runs := count(`SELECT count(*) FROM runs`)
	require.Zero(t, count(`SELECT count(*) FROM runs WHERE status IN ('running', 'queued')`), "a quiet daemon's stop leaves no run in flight")
	require.Equal(t, soakWorkspaces, count(`SELECT count(DISTINCT workspace) FROM runs`), "every workspace ran")
	require.Equal(t, soakWorkspaces, count(`SELECT count(*) FROM workspace_state`))
	require.Zero(t, count(`SELECT count(*) FROM outbox WHERE delivered_at IS NULL OR dead <> 0`), "nothing pending, nothing given up")
	require.Equal(t, float64(runs), finished, "the runs the daemon counted are the runs stored") //nolint:testifylint // float-compare: a whole-number count, exact in float64

	// Exactly once, in order.
	type sent struct {
		seq      int
		incident string
	}
	enqueued := map[string]sent{}
	rows, err := db.Query(`SELECT id, seq, incident_key FROM outbox WHERE notifier = 'hook'`)
	require.NoError(t, err)
	for rows.Next() {
		var id, key string
		var seq int
		require.NoError(t, rows.Scan(&id, &seq, &key))
		// The row is per (message, notifier): "<message id>/hook"; the
		// delivery header carries the message id.
		enqueued[strings.TrimSuffix(id, "/hook")] = sent{seq, key}
	}
	require.NoError(t, rows.Err())
	received := map[string]int{}
	lastSeq := map[string]int{}
	lastEvent := map[string]string{}
	for _, del := range hook.Deliveries() {
		require.True(t, del.Verified, del.Reason)
		id := del.Header.Get("X-Driftwatch-Delivery")
		received[id]++
		require.Equal(t, 1, received[id], "delivery %s arrived twice", id)
		s, ok := enqueued[id]
		require.True(t, ok, "delivery %s is an outbox message", id)
		require.Greater(t, s.seq, lastSeq[s.incident], "incident %s: in enqueue order", s.incident)
		lastSeq[s.incident] = s.seq
		ev, prev := del.Payload.Event, lastEvent[s.incident]
		switch ev {
		case "open":
			require.Contains(t, []string{"", "resolve"}, prev, "incident %s opened twice", s.incident)
		case "update", "resolve", "renotify":
			require.Contains(t, []string{"open", "update", "renotify"}, prev, "incident %s: %s after %q", s.incident, ev, prev)
		}
		lastEvent[s.incident] = ev
	}
	require.Len(t, received, len(enqueued), "every enqueued message arrived")

	// Incidents as the files say.
	for _, ws := range drifters {
		var state string
		err := db.QueryRow(`SELECT state FROM incidents WHERE workspace = ? AND class = 'drift'`, ws).Scan(&state)
		if !drifted[ws] && err == sql.ErrNoRows {
			continue
		}
		require.NoError(t, err, ws)
		want := "resolved"
		if drifted[ws] {
			want = "open"
		}
		require.Equal(t, want, state, ws)
	}
	events := map[string]int{}
	for _, del := range hook.Deliveries() {
		events[del.Payload.Event]++
	}
	keys := make([]string, 0, len(events))
	for k := range events {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("soak: %s of drift, %d workspaces (%d drifting), %d edits; %d runs, %.0f skipped slots; %d notifications delivered once each %v after %d attempts (injected failures %v); losses 0, duplicates 0; settled %s after the last edit",
		dur, soakWorkspaces, len(drifters), edits, runs, skipped, len(received), events, hook.Attempts(), injected, settleTook.Round(time.Second))
}

// sleep waits for dur, failing the test if the daemon exits meanwhile.
func (d *daemonProc) sleep(dur time.Duration) {
	d.t.Helper()
	if dur <= 0 {
		return
	}
	select {
	case <-d.exited:
		d.t.Fatalf("daemon exited (code %d)", d.code)
	case <-time.After(dur):
	}
}

// metricSum is the sum of every series of /metrics starting with prefix
// (a metric name and "{": all its label sets).
func (d *daemonProc) metricSum(prefix string) float64 {
	d.t.Helper()
	body := d.getText("/metrics")
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var v float64
		_, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
		require.NoError(d.t, err, line)
		sum += v
	}
	return sum
}
