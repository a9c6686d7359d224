package run

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule"
)

// Once queues a run of every workspace (one queued already, by Recover,
// counts) and returns their results once each has one, or ctx's error.
// Schedule must be running.
func (m *Manager) Once(ctx context.Context, workspaces []string) ([]drift.Result, error) {
	done := make(chan drift.Result, len(workspaces))
	m.mu.Lock()
	m.onResult = func(r drift.Result) { done <- r }
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.onResult = nil
		m.mu.Unlock()
	}()
	for _, w := range workspaces {
		if err := m.sched.Trigger(w, "once"); err != nil && !errors.Is(err, schedule.ErrBusy) {
			return nil, err
		}
	}
	results := make([]drift.Result, 0, len(workspaces))
	for range workspaces {
		select {
		case r := <-done:
			results = append(results, r)
		case <-ctx.Done():
			return results, ctx.Err()
		}
	}
	return results, nil
}

// Retain applies run retention until ctx ends: at once, then hourly,
// keep (store.keep_runs) finished runs per workspace and none older than
// maxAge (store.max_age; 0: no limit), as policy says at each pass.
func (m *Manager) Retain(ctx context.Context, policy func() (keep int, maxAge time.Duration)) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		keep, maxAge := policy()
		var olderThan time.Time
		if maxAge > 0 {
			olderThan = time.Now().Add(-maxAge)
		}
		if n, err := m.store.Prune(ctx, keep, olderThan); err != nil && ctx.Err() == nil {
			m.log.Warn("store: prune", "err", err)
		} else if n > 0 {
			m.log.Info("store: pruned old runs", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Delivery is where a one pass's alerts go (the outbox): run until ctx
// ends, and drained before the pass returns.
type Delivery interface {
	Run(ctx context.Context) error
	Drain(ctx context.Context, wait time.Duration) bool
}

// Pass is the daemon's --once: it recovers what a previous process left,
// runs every workspace once through the scheduler's queue (so the
// concurrency cap holds), records the runs, delivers their alerts through
// out (waiting up to two minutes) and returns the results. An interrupted
// pass (ctx ended) is the error "interrupted".
func (m *Manager) Pass(ctx context.Context, workspaces []string, out Delivery) ([]drift.Result, error) {
	if err := m.Recover(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // ends the scheduler and the outbox, then wait for them
		wg.Wait()
	}()
	wg.Add(2)
	go func() { defer wg.Done(); _ = m.Schedule(ctx) }()
	go func() { defer wg.Done(); _ = out.Run(ctx) }()
	results, err := m.Once(ctx, workspaces)
	if err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		return nil, err
	}
	if !out.Drain(ctx, 2*time.Minute) {
		m.log.Warn("notifications still pending at exit; they are delivered at the next start")
	}
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	return results, nil
}
