package tftest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// A run-marked process whose run directory is gone is a leftover; one
// whose run is still going (directory present), or an unmarked one, is not.
func TestLeftovers(t *testing.T) {
	start := func(env ...string) int {
		t.Helper()
		c := exec.Command("sleep", "60")
		c.Env = env
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	live := t.TempDir()
	gone := filepath.Join(t.TempDir(), "removed-run-dir")
	orphan := start("DRIFTWATCH_RUN_MARKER=m1", "TMPDIR="+gone)
	running := start("DRIFTWATCH_RUN_MARKER=m2", "TMPDIR="+live)
	unmarked := start("TMPDIR=" + gone)

	left := leftovers()
	if _, ok := left[orphan]; !ok {
		t.Errorf("the orphan %d is not found: %v", orphan, left)
	}
	for _, pid := range []int{running, unmarked} {
		if _, ok := left[pid]; ok {
			t.Errorf("pid %d is not a leftover", pid)
		}
	}
}
