package tftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A run-marked process whose run directory is gone is a leftover; one
// whose run is still going (directory present), or an unmarked one, is not.
func TestLeftovers(t *testing.T) {
	start := func(argv []string, env ...string) int {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = env
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	live := t.TempDir()
	gone := filepath.Join(t.TempDir(), "removed-run-dir")
	sleep := []string{"sleep", "60"}
	orphan := start(sleep, "DRIFTWATCH_RUN_MARKER=m1", "TMPDIR="+gone)
	running := start(sleep, "DRIFTWATCH_RUN_MARKER=m2", "TMPDIR="+live)
	unmarked := start(sleep, "TMPDIR="+gone)

	// The same, in a mount namespace of its own (a container's run): its
	// TMPDIR is a path of its own filesystem.
	contained := -1
	if path, err := exec.LookPath("unshare"); err == nil && os.Geteuid() == 0 {
		contained = start([]string{path, "--mount", "sleep", "60"}, "DRIFTWATCH_RUN_MARKER=m3", "TMPDIR="+gone, "PATH="+os.Getenv("PATH"))
		self, _ := os.Readlink("/proc/self/ns/mnt")
		deadline := time.Now().Add(10 * time.Second)
		for {
			ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", contained))
			if ns != self && ns != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d did not enter a mount namespace of its own", contained)
			}
			time.Sleep(10 * time.Millisecond)
		}
	} else {
		t.Log("not root or no unshare: the other mount namespace is not tried")
	}

	left := leftovers()
	if _, ok := left[orphan]; !ok {
		t.Errorf("the orphan %d is not found: %v", orphan, left)
	}
	for _, pid := range []int{running, unmarked, contained} {
		if _, ok := left[pid]; ok {
			t.Errorf("pid %d is not a leftover", pid)
		}
	}
}
