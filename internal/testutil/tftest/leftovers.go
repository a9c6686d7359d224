package tftest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Main runs a test binary's tests, then fails the binary if a process of
// a run outlived the run: one that carries a run marker
// (DRIFTWATCH_RUN_MARKER) while its run directory (its TMPDIR) is gone,
// removed when the run ended or with the test's temporary directory. A
// run still going (in another test binary, say) keeps its directory and
// is not counted. Runs must leave nothing behind, not even a provider of
// a killed daemon's run. Leftovers are listed and killed. Use it as
// TestMain: os.Exit(tftest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	// Give processes of a run stopped at the very end a moment to exit.
	deadline := time.Now().Add(10 * time.Second)
	left := leftovers()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		left = leftovers()
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d process(es) of this test binary's runs outlived them:\n", len(left))
		for pid, cmd := range left {
			fmt.Fprintf(os.Stderr, "  pid %d: %s\n", pid, cmd)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return 1
	}
	return code
}

// leftovers maps pid to command line of the live processes that carry a
// run marker and whose TMPDIR no longer exists. A process in another
// mount namespace (a container's: the image's daemons under imagetest)
// is not looked at: its TMPDIR is a path in its own filesystem, absent
// from this one while its run is going.
func leftovers() map[int]string {
	out := map[int]string{}
	mnt, _ := os.Readlink("/proc/self/ns/mnt")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if theirs, _ := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "mnt")); theirs != mnt {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("DRIFTWATCH_RUN_MARKER=")) {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if dir, ok := strings.CutPrefix(string(kv), "TMPDIR="); ok && !exists(dir) {
				stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
				if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
					break // a zombie is already dead
				}
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
