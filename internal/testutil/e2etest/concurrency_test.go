package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestConcurrencyGroupThrottled plays a cloud account whose API throttles
// every call (the test provider's dwtest_throttle, while a file exists):
// the account's concurrency group backs off as a whole (its plans come at
// most one a hold apart), another account's workspace is not slowed,
// the throttled runs page nobody and change no workspace's state, and
// once the API answers again every workspace of the group is checked:
// nothing is lost.
func TestConcurrencyGroupThrottled(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	flag := filepath.Join(e.root, "account-a-throttled")
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	journal := func(ws string) string { return filepath.Join(e.root, "journal-"+ws) }
	for _, ws := range []string{"a1", "a2", "b1"} {
		while := flag
		if ws == "b1" {
			while = filepath.Join(e.root, "never")
		}
		e.workspace(t, ws, map[string]string{"main.tf": providers + fmt.Sprintf(`
data "dwtest_throttle" "api" {
  while_exists = "%s"
  journal      = "%s"
}
`, while, journal(ws))})
	}
	hook, alerts := webhookAlerts(t, e)
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
allow_sub_minute_schedules: true
max_concurrent_runs: 4
concurrency_groups:
  - { label: account, max_concurrent: 1, backoff: 3s, backoff_max: 6s }
%s
defaults:
  schedule: "@every 1s"
  backend_policy: { allow_local: true }
workspaces:
  - { name: a1, source: { path: ./a1 }, labels: { account: a } }
  - { name: a2, source: { path: ./a2 }, labels: { account: a } }
  - { name: b1, source: { path: ./b1 }, labels: { account: b } }
`, listen, filepath.Join(e.root, "dw.db"), alerts))
	d := startDaemon(t, cfg, listen)

	var throttledRun apiRun
	d.eventually("a throttled run of account a", 60*time.Second, func() bool {
		for _, ws := range []string{"a1", "a2"} {
			for _, r := range d.runs(ws) {
				if strings.Contains(r.Error, "throttled by the cloud API") {
					throttledRun = r
					return true
				}
			}
		}
		return false
	})
	require.Equal(t, "errored", throttledRun.Status)
	require.Contains(t, throttledRun.Error, "account=a until ")
	require.Contains(t, throttledRun.Error, "ThrottlingException: Rate exceeded")
	d.eventually("the group's hold in the metrics", 30*time.Second, func() bool {
		return d.metric(`driftwatch_concurrency_group_hold_seconds{group="account=a"}`) > 0
	})
	require.GreaterOrEqual(t, d.metric(`driftwatch_concurrency_group_throttled_total{group="account=a"}`), 1.0)
	require.Less(t, d.metric(`driftwatch_concurrency_group_hold_seconds{group="account=b"}`), 0.0, "account b is not held: no series")
	// The API and the pages say why the group's workspaces wait.
	d.eventually("the hold on the workspace", 30*time.Second, func() bool {
		return strings.HasPrefix(d.workspaces()["a2"].Held, "account=a until ")
	})
	require.Empty(t, d.workspaces()["b1"].Held)
	require.Contains(t, d.page("/workspaces/a2"), "the cloud API throttled its group")

	// Watch both accounts for a while: account a's calls come one hold
	// apart (the backoff's first step less its jitter, 2.4s, at least);
	// account b runs on its schedule.
	start := time.Now()
	time.Sleep(12 * time.Second)
	aCalls := append(reads(t, journal("a1"), start), reads(t, journal("a2"), start)...)
	slices.SortFunc(aCalls, func(x, y time.Time) int { return x.Compare(y) })
	for i := 1; i < len(aCalls); i++ {
		require.GreaterOrEqual(t, aCalls[i].Sub(aCalls[i-1]), 2400*time.Millisecond, "account a's calls: %v", aCalls)
	}
	bCalls := reads(t, journal("b1"), start)
	require.Greater(t, len(bCalls), len(aCalls), "account b is not slowed by account a's backoff (a: %d calls, b: %d)", len(aCalls), len(bCalls))

	ws := d.workspaces()
	for _, name := range []string{"a1", "a2"} {
		require.NotEqual(t, "errored", ws[name].Status, "a throttled plan says nothing about the workspace")
	}
	require.Equal(t, "clean", ws["b1"].Status)

	// The API answers again: each workspace of the group is checked.
	require.NoError(t, os.Remove(flag))
	d.eventually("account a checked after its hold", 60*time.Second, func() bool {
		ws := d.workspaces()
		return ws["a1"].Status == "clean" && ws["a2"].Status == "clean"
	})
	d.eventually("the hold gone from the metrics", 30*time.Second, func() bool {
		return d.metric(`driftwatch_concurrency_group_hold_seconds{group="account=a"}`) == -1
	})
	require.Empty(t, hook.Deliveries(), "throttled plans page nobody")
}

// reads are the times a dwtest_throttle journal holds from since on.
func reads(t *testing.T, journal string, since time.Time) []time.Time {
	t.Helper()
	b, err := os.ReadFile(journal)
	require.NoError(t, err)
	var out []time.Time
	for _, line := range strings.Fields(string(b)) {
		at, err := time.Parse(time.RFC3339Nano, line)
		require.NoError(t, err)
		if !at.Before(since) {
			out = append(out, at)
		}
	}
	return out
}
