//go:build faults

package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestFaultsClockJump: the daemon's wall clock jumps forward an hour, then
// back. Forward: within the scheduler's one-minute wake-up every
// workspace runs once (the missed slots are dropped, not replayed: no
// storm) and it says so in the log; back: no slot runs twice, so nothing
// runs until the clock reaches the next slot, the step is logged, and a
// run asked for by hand still runs at once.
func TestFaultsClockJump(t *testing.T) {
	parallelBesideSoak(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	names := []string{"a", "b", "c", "d", "e"}
	var ws strings.Builder
	for _, n := range names {
		e.workspace(t, n, map[string]string{"main.tf": "terraform {}\n"})
		fmt.Fprintf(&ws, "  - { name: %s, source: { path: ./%s } }\n", n, n)
	}
	offset := filepath.Join(e.root, "clock-offset")
	require.NoError(t, os.WriteFile(offset, []byte("0s"), 0o644))
	token := "dw-clock-token-81-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
defaults:
  schedule: "* * * * *"
workspaces:
%s`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"), ws.String()))
	d := startDaemonEnv(t, cfg, listen, []string{"DRIFTWATCH_FAULTS_CLOCK_OFFSET_FILE=" + offset})
	count := func() map[string]int {
		out := map[string]int{}
		for _, n := range names {
			out[n] = len(d.runs(n))
		}
		return out
	}
	settled := func() bool {
		for _, n := range names {
			r := d.runs(n)
			if len(r) == 0 || r[0].Status != "clean" {
				return false
			}
		}
		return true
	}
	d.eventually("the first runs", 60*time.Second, settled)

	// Forward an hour.
	before := count()
	skipped := d.metric("driftwatch_runs_skipped_total")
	require.NoError(t, os.WriteFile(offset, []byte("1h"), 0o644))
	d.eventually("the late wake-up", 75*time.Second, func() bool {
		return strings.Contains(d.logs.String(), "missed slots are not replayed")
	})
	d.eventually("the catch-up runs done", 60*time.Second, func() bool {
		c := count()
		for _, n := range names {
			if c[n] == before[n] {
				return false
			}
		}
		return settled()
	})
	after := count()
	for _, n := range names {
		// One catch-up run each; a second only if the next minute's
		// slot came meanwhile, never the sixty slots jumped over.
		require.LessOrEqual(t, after[n]-before[n], 2, "workspace %s: runs after the jump %v -> %v", n, before, after)
	}
	require.Equal(t, skipped, d.metric("driftwatch_runs_skipped_total"), "jumped-over slots are dropped, not counted as skipped") //nolint:testifylint // float-compare: a whole-number count, exact in float64

	// Back an hour (to the real time): the slots of the hour that repeats
	// already ran.
	require.NoError(t, os.WriteFile(offset, []byte("0s"), 0o644))
	d.eventually("the step back noticed", 75*time.Second, func() bool {
		return strings.Contains(d.logs.String(), "wall clock stepped back")
	})
	quiet := count()
	d.sleep(70 * time.Second)
	require.Equal(t, quiet, count(), "no slot runs twice after the clock stepped back")
	// A run asked for by hand is not a slot: it runs.
	require.Equal(t, 202, d.post("/api/v1/workspaces/a/runs", token))
	d.eventually("the manual run", 60*time.Second, func() bool { return len(d.runs("a")) == quiet["a"]+1 && settled() })
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}
