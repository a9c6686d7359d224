package tftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A run-marked process whose run directory is gone is a leftover, also in
// a mount namespace of its own (a jailed run's); one whose run is still
// going (directory present), an unmarked one, or one inside a container
// (below a container runtime's shim, its TMPDIR a path of the container's)
// is not.
func TestLeftovers(t *testing.T) {
	start := func(argv []string, env ...string) int {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = env
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	live := t.TempDir()
	gone := filepath.Join(t.TempDir(), "removed-run-dir")
	sleep := []string{"sleep", "60"}
	orphan := start(sleep, "DRIFTWATCH_RUN_MARKER=m1", "TMPDIR="+gone)
	running := start(sleep, "DRIFTWATCH_RUN_MARKER=m2", "TMPDIR="+live)
	unmarked := start(sleep, "TMPDIR="+gone)
	contained := inShim(t, "DRIFTWATCH_RUN_MARKER=m3", "TMPDIR="+gone)
	want := []int{orphan}
	if path, err := exec.LookPath("unshare"); err == nil && os.Geteuid() == 0 {
		jailed := start([]string{path, "--mount", "sleep", "60"}, "DRIFTWATCH_RUN_MARKER=m4", "TMPDIR="+gone, "PATH="+os.Getenv("PATH"))
		self, _ := os.Readlink("/proc/self/ns/mnt")
		require.Eventually(t, func() bool {
			ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", jailed))
			return ns != self && ns != ""
		}, 10*time.Second, 10*time.Millisecond)
		want = append(want, jailed)
	} else {
		t.Log("not root or no unshare: a leftover in another mount namespace is not tried")
	}

	left := leftovers()
	for _, pid := range want {
		require.Contains(t, left, pid, "pid %d is a leftover", pid)
	}
	for _, pid := range []int{running, unmarked, contained} {
		require.NotContains(t, left, pid, "pid %d is not a leftover", pid)
	}
	require.False(t, inContainer(os.Getpid()))
}

// inShim starts sleep with env below a process named as a container
// runtime's shim and returns sleep's PID.
func inShim(t *testing.T, env ...string) int {
	t.Helper()
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	shim := filepath.Join(t.TempDir(), "containerd-shim-runc-v2")
	b, err := os.ReadFile(sh)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(shim, b, 0o755))
	cmd := exec.Command(shim, "-c", "sleep 60 & echo $!; wait")
	cmd.Env = append(slices.Clone(env), "PATH="+os.Getenv("PATH"))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	require.NoError(t, err)
	t.Cleanup(func() { _ = exec.Command("kill", strconv.Itoa(child)).Run() })
	require.Eventually(t, func() bool { return inContainer(child) }, 5*time.Second, 20*time.Millisecond)
	return child
}
