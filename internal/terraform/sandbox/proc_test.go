package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// KillOwned kills exactly the processes tagged with the owner, wherever
// the entry is in their environment, and no process whose owner merely
// shares a prefix or suffix with it.
func TestKillOwned(t *testing.T) {
	start := func(env ...string) *exec.Cmd {
		t.Helper()
		c := exec.Command("sleep", "60")
		c.Env = env
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	first := start(OwnerEnv+"=dw-abc", "PATH=/usr/bin:/bin")
	last := start("PATH=/usr/bin:/bin", OwnerEnv+"=dw-abc")
	longer := start(OwnerEnv + "=dw-abcd")
	suffix := start(OwnerEnv + "=x-dw-abc")
	other := start("X" + OwnerEnv + "=dw-abc")
	none := start("PATH=/usr/bin:/bin")

	require.Equal(t, 0, KillOwned(""), "no owner: nothing")
	require.Equal(t, 2, KillOwned("dw-abc"))
	for _, c := range []*exec.Cmd{first, last} {
		err := c.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	}
	for _, c := range []*exec.Cmd{longer, suffix, other, none} {
		// A killed child stays a zombie until waited for: read its state.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid))
		require.NoError(t, err)
		state := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0]
		require.NotEqual(t, "Z", state, "pid %d was killed", c.Process.Pid)
	}
}
