package tftest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A process below a container runtime's shim is the container's, not a
// leftover of this binary's runs; this process is not in a container.
func TestInContainer(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	shim := filepath.Join(t.TempDir(), "containerd-shim-runc-v2")
	b, err := os.ReadFile(sh)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(shim, b, 0o755))
	cmd := exec.Command(shim, "-c", "sleep 30 & echo $!; wait")
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
	require.False(t, inContainer(os.Getpid()))
}
