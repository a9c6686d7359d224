package sandbox_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// lingerer is bubblewrap running sleep without --die-with-parent: its
// process would outlive bubblewrap's first process, as the one bubblewrap
// clones does while it waits for its go.
func lingerer(bwrap string) *exec.Cmd {
	return exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--as-pid-1",
		"--ro-bind", "/", "/", "--proc", "/proc", "--info-fd", "3", "--", "/usr/bin/sleep", "300")
}

// gone reports whether process pid has ended (or is a zombie).
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] == 'Z'
}

func sleeping(t *testing.T, pid int) {
	t.Helper()
	require.Positive(t, pid, "bubblewrap reported no process")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return strings.HasPrefix(string(b), "/usr/bin/sleep\x00300")
	}, 5*time.Second, 10*time.Millisecond, "the reported PID %d is not the jailed sleep", pid)
}

// Every process of a jail ends with the jail's first process, even one
// that never asked to die with its parent; the PID reported is the jailed
// process's in the daemon's namespace.
func TestJailEndsWithItsFirstProcess(t *testing.T) {
	bwrap := tftest.Jail(t)
	nets := map[string]*sandbox.NetSpec{"host network": nil}
	if _, err := exec.LookPath("pasta"); err == nil {
		nets["own network"] = &sandbox.NetSpec{Pasta: tftest.JailNet(t)}
	}
	for name, net := range nets {
		t.Run(name, func(t *testing.T) {
			cmd := lingerer(bwrap)
			pid := make(chan int, 1)
			require.NoError(t, sandbox.StartJailed(cmd, net, pid))
			p := <-pid
			sleeping(t, p)
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			require.Eventually(t, func() bool { return gone(p) }, 10*time.Second, 20*time.Millisecond,
				"the jailed process outlived the jail's first process")
		})
	}
}

// A daemon killed with SIGKILL takes its jails with it, whatever state
// bubblewrap's processes are in.
func TestJailEndsWithTheDaemon(t *testing.T) {
	if bwrap := os.Getenv("DRIFTWATCH_TEST_JAIL_DAEMON"); bwrap != "" {
		// The "daemon": start a jail, say the PID, wait to be killed.
		cmd := lingerer(bwrap)
		pid := make(chan int, 1)
		if err := sandbox.StartJailed(cmd, nil, pid); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(<-pid)
		select {}
	}
	bwrap := tftest.Jail(t)
	daemon := exec.Command(os.Args[0], "-test.run=^TestJailEndsWithTheDaemon$")
	daemon.Env = append(os.Environ(), "DRIFTWATCH_TEST_JAIL_DAEMON="+bwrap)
	out, err := daemon.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, daemon.Start())
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	p, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "the daemon said %q", line)
	sleeping(t, p)
	require.NoError(t, daemon.Process.Signal(syscall.SIGKILL))
	_ = daemon.Wait()
	require.Eventually(t, func() bool { return gone(p) }, 10*time.Second, 20*time.Millisecond,
		"the jailed process outlived the daemon")
}
