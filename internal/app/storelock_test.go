package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// A daemon kills, at start, the processes its store's previous daemon left
// running (providers, provisioners: Terraform itself dies with its parent),
// and no other; a second daemon on the same store is refused while the
// first runs, naming the store and its lock file. A daemon that stops
// removes its kept working directories.
func TestDaemonStoreOwnership(t *testing.T) {
	dir := t.TempDir()
	storePath := filepath.Join(dir, "data", "dw.db")
	cfg := filepath.Join(dir, "driftwatch.yaml")
	workDir := filepath.Join(dir, "runs")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "server: { listen: \"127.0.0.1:0\" }\nstore: { path: %s }\nterraform: { work_dir: %s }\nworkspaces: []\n", storePath, workDir), 0o600))

	orphan := func(owner string) *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.Env = []string{sandbox.OwnerEnv + "=" + owner}
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	left := orphan(leader.StoreOwner(storePath))
	others := orphan(leader.StoreOwner(filepath.Join(dir, "other.db")))

	var logs syncBuf
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := RunDaemon(ctx, DaemonOptions{ConfigPath: cfg, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		done <- err
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "driftwatch daemon started") }, 10*time.Second, 20*time.Millisecond)

	err := left.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the left-over process was killed")
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	require.Contains(t, logs.String(), `"msg":"killed processes left running by a previous daemon","processes":1`)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", others.Process.Pid))
	require.NoError(t, err)
	require.NotEqual(t, "Z", strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0], "another store's process is left alone")

	code, err := RunDaemon(t.Context(), DaemonOptions{ConfigPath: cfg, Logger: slog.New(slog.DiscardHandler), StoreLockWait: 200 * time.Millisecond})
	require.Equal(t, 1, code)
	require.EqualError(t, err, "store "+storePath+": in use by another driftwatch daemon (lock file "+storePath+".lock)")

	// A workspace's kept working directory goes with the daemon.
	kept := sandbox.KeptDir(workDir, leader.StoreOwner(storePath), "ws")
	require.NoError(t, os.MkdirAll(kept, 0o700))

	cancel()
	require.NoError(t, <-done)
	require.NoDirExists(t, kept, "a stopped daemon leaves no kept working directory")
	// Stopped: the store is free again.
	unlock, err := leader.ClaimStore(t.Context(), slog.New(slog.DiscardHandler), storePath, dir, 200*time.Millisecond)
	require.NoError(t, err)
	unlock()
}

// syncBuf is a bytes.Buffer safe for the daemon's concurrent log writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
