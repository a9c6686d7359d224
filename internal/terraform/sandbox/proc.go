package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

// KillMarked SIGKILLs every process whose environment carries this run's
// marker: Terraform, its providers and provisioners, whatever process group
// they moved to. It is Linux-only by design (reads /proc); elsewhere it is
// a no-op and the process-group handling of tfexec is all there is.
func KillMarked(marker string) int {
	return killByEnv(MarkerEnv + "=" + marker)
}

// KillOwned SIGKILLs every process of every run of owner
// (terraform.Request.Owner): at a daemon's start, what a previous process of
// it (killed with SIGKILL, or crashed) left behind; Terraform itself dies
// with its parent (Pdeathsig), but its providers and provisioners do not.
func KillOwned(owner string) int {
	if owner == "" {
		return 0
	}
	return killByEnv(OwnerEnv + "=" + owner)
}

// killByEnv SIGKILLs every other process whose environment has the entry
// kv ("NAME=value").
func killByEnv(kv string) int {
	needle := []byte("\x00" + kv + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(append([]byte{0}, b...), 0), needle) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// SweepOnDone kills the run's processes if they are still alive `after` the
// context is done. This unblocks tfexec, which reads the child's
// pipes to EOF before Wait and would otherwise hang on a grandchild that
// inherited them.
func SweepOnDone(ctx context.Context, marker string, after time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			KillMarked(marker)
		}
	}()
	return func() { close(done) }
}

// LockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Begin starts a run's lifetime: the kill grace (req.KillGrace or
// DefaultKillGrace), the run's timeout as a context cause
// (terraform.ErrTimeout), and a fresh marker whose processes are swept after
// grace once ctx is done and, at the latest, by end. Call end exactly once
// when the run is over.
func Begin(ctx context.Context, req terraform.Request) (runCtx context.Context, marker string, grace time.Duration, end func()) {
	grace = req.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	cancel := context.CancelFunc(func() {})
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, req.Timeout, terraform.ErrTimeout)
	}
	marker = RandomHex(16)
	stop := SweepOnDone(ctx, marker, grace+2*time.Second)
	return ctx, marker, grace, func() {
		stop()
		KillMarked(marker) // nothing of the run may outlive it
		cancel()
	}
}
