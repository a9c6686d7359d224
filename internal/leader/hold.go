package leader

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
)

// FileLocked is whether cfg's store has a file lock (ClaimStore): a SQLite
// store does; a PostgreSQL store is shared by replicas, which take the
// database's leadership lock instead (HoldLock).
func FileLocked(cfg *config.Config) bool { return cfg.Store.Driver != config.StorePostgres }

// ClaimAtStart is the store lock a daemon takes before it opens its store:
// one scheduling daemon per store, waiting up to wait (default
// StoreLockWait) for another holder.
// With leader election (electing) a standby may share the store (it
// serves the status page and read API from it): the lock is then taken
// when leading (ClaimWhenLeading). Where no lock is taken the unlock does
// nothing.
func ClaimAtStart(ctx context.Context, log *slog.Logger, cfg *config.Config, electing bool, wait time.Duration) (unlock func(), err error) {
	if electing || !FileLocked(cfg) {
		return func() {}, nil
	}
	if wait <= 0 {
		wait = StoreLockWait
	}
	return ClaimStore(ctx, log, cfg.Store.Path, cfg.Terraform.WorkDir, wait)
}

// ClaimWhenLeading is the store lock of an electing daemon that begins to
// lead (run.Lead's Claim): the standby it was waits there for the previous
// leader's lock, read from the current config. It is nil where the lock
// was taken at start or is not taken (ClaimAtStart).
func ClaimWhenLeading(log *slog.Logger, electing bool, current func() *config.Config) func(context.Context) (func(), error) {
	if !electing || !FileLocked(current()) {
		return nil
	}
	return func(ctx context.Context) (func(), error) {
		cfg := current()
		log.Info("leading: taking the store lock", "store", cfg.Store.Path)
		return ClaimStore(ctx, log, cfg.Store.Path, cfg.Terraform.WorkDir, 0)
	}
}

// Lock is a store's leadership lock (sqlite.Store.Lead): leading ends
// with ctx, or with a cause of its own when the lock is lost; release
// unlocks it.
type Lock interface {
	Lead(ctx context.Context) (leading context.Context, release func(), err error)
}

// HoldLock runs lead while this daemon holds l, the leadership of a daemon
// without leader election: PostgreSQL replicas wait there for the
// database's lock, a SQLite store's daemon leads at once. When leading
// ended because the lock was lost (its cause is lost) HoldLock returns
// that cause once lead has returned, so that the process ends and starts
// again from a clean state, as losing the Lease does (Campaign).
func HoldLock(ctx context.Context, l Lock, lost error, lead func(context.Context) error) error {
	leading, release, err := l.Lead(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := lead(leading); err != nil {
		return err
	}
	if cause := context.Cause(leading); errors.Is(cause, lost) {
		return cause
	}
	return nil
}
