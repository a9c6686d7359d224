package outbox

import (
	"context"
	"time"
)

// Drain waits (at most limit, and while ctx lasts) until no message is
// pending, so that a one-pass daemon (--once) delivers its alerts before
// it exits; Run must be running. It reports whether the outbox is empty:
// undelivered messages stay in the store for the next start.
func (d *Dispatcher) Drain(ctx context.Context, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		stats, err := d.store.OutboxStats(ctx)
		if err != nil {
			return false
		}
		pending := 0
		for _, c := range stats {
			pending += c.Pending
		}
		if pending == 0 {
			return true
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return false
}
