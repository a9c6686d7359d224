package leader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// ErrStoreInUse is the cause of a lock wait that ran out: another daemon
// holds the store.
var ErrStoreInUse = errors.New("in use by another driftwatch daemon")

// StoreLockWait is how long a daemon without leader election waits for
// its store's lock before it gives up.
const StoreLockWait = 5 * time.Second

// ClaimStore takes the store's lock (see lockStore), then kills what a
// previous holder's runs left running (providers and provisioners of a
// daemon killed with SIGKILL: Terraform itself died with it) and removes
// the run directories they left under workDir (copies of the code, var
// files with the workspaces' vars). Its unlock removes the daemon's kept
// working directories (sandbox.RemoveKeptDirs) before it releases the lock.
func ClaimStore(ctx context.Context, log *slog.Logger, storePath, workDir string, wait time.Duration) (unlock func(), err error) {
	release, err := lockStore(ctx, storePath, wait)
	if err != nil {
		return nil, err
	}
	owner := StoreOwner(storePath)
	if n := sandbox.KillOwned(owner); n > 0 {
		log.Warn("killed processes left running by a previous daemon", "processes", n)
	}
	if n := sandbox.SweepOwnedDirs(workDir, owner); n > 0 {
		log.Warn("removed run directories left by a previous daemon", "directories", n)
	}
	return func() {
		// The workspaces' kept working directories go with the daemon.
		sandbox.RemoveKeptDirs(workDir, owner)
		release()
	}, nil
}

// lockStore makes the daemon the only one scheduling on its store: two
// daemons on one store would run every workspace twice, error each other's
// runs as restarted and kill each other's Terraform (see StoreOwner). It
// waits up to wait (0: until ctx ends) for another holder to exit. The
// lock is a flock on "<store>.lock", released by the kernel when the
// process dies.
func lockStore(ctx context.Context, storePath string, wait time.Duration) (unlock func(), err error) {
	path := storePath + ".lock"
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, wait, ErrStoreInUse)
		defer cancel()
	}
	unlock, err = sandbox.LockFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w (lock file %s)", storePath, err, path)
	}
	return unlock, nil
}

// StoreOwner is the terraform.Request.Owner of a daemon's runs: derived from
// its store, of which it is the only user (lockStore), so that a restarted
// daemon finds and kills the providers and provisioners its killed
// predecessor left running (sandbox.KillOwned).
func StoreOwner(storePath string) string {
	abs, err := filepath.Abs(storePath)
	if err != nil {
		abs = storePath
	}
	sum := sha256.Sum256([]byte(abs))
	return "dw-" + hex.EncodeToString(sum[:8])
}
