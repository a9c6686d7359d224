//go:build unix

package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// configureProcess starts git in a new session, so that it has no
// controlling terminal to prompt on and its helpers (git-remote-http,
// index-pack) share a process group that cancellation can signal as a whole.
// SIGTERM lets git remove its lock files; cmd.WaitDelay bounds the wait.
func configureProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}

// killProcessGroup kills whatever is left of git's process group.
func killProcessGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL) // ESRCH when all exited
}

// lockPoll is how often a contended lock is retried.
const lockPoll = 50 * time.Millisecond

// lockFile takes an exclusive flock on path, waiting until it is free or ctx
// is done. flock conflicts between open files, so it serialises goroutines of
// one process as well as separate processes sharing the cache; the kernel
// releases it if the process dies.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cache lock: %w", err)
	}
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("cache lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
}
