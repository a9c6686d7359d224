package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/driftwatch/driftwatch/internal/runner/sandbox"
)

// errStoreInUse is the cause of a lock wait that ran out: another daemon
// holds the store.
var errStoreInUse = errors.New("in use by another driftwatch daemon")

// storeLockWait is how long a daemon waits for its store's lock.
var storeLockWait = 5 * time.Second

// lockStore makes the daemon the only one using its store: two daemons on
// one store would run every workspace twice and, at start, kill each
// other's Terraform (see storeOwner). It waits a few seconds for a
// previous process that is still exiting. The lock is a flock on
// "<store>.lock", released by the kernel when the process dies.
func lockStore(ctx context.Context, storePath string) (unlock func(), err error) {
	path := storePath + ".lock"
	ctx, cancel := context.WithTimeoutCause(ctx, storeLockWait, errStoreInUse)
	defer cancel()
	unlock, err = sandbox.LockFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w (lock file %s)", storePath, err, path)
	}
	return unlock, nil
}

// storeOwner is the runner.Request.Owner of a daemon's runs: derived from
// its store, of which it is the only user (lockStore), so that a restarted
// daemon finds and kills the providers and provisioners its killed
// predecessor left running (sandbox.KillOwned).
func storeOwner(storePath string) string {
	abs, err := filepath.Abs(storePath)
	if err != nil {
		abs = storePath
	}
	sum := sha256.Sum256([]byte(abs))
	return "dw-" + hex.EncodeToString(sum[:8])
}
