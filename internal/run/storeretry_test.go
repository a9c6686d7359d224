package run

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// unavailableStore fails the next `fails` verdict writes as a full disk
// does, then writes through.
type unavailableStore struct {
	Store
	fails  atomic.Int32
	writes atomic.Int32
}

func (s *unavailableStore) FinishRunWithOutcome(ctx context.Context, r store.Run, decide store.Outcome) (before, after store.WorkspaceState, err error) {
	s.writes.Add(1)
	if s.fails.Add(-1) >= 0 {
		return before, after, fmt.Errorf("finish run %q: database or disk is full: %w", r.ID, store.ErrUnavailable)
	}
	return s.Store.FinishRunWithOutcome(ctx, r, decide)
}

// failingRunner ends every run at once with a plan error: a verdict
// (errored) to record.
type failingRunner struct{}

func (failingRunner) Run(context.Context, terraform.Request) (runner.Result, error) {
	return runner.Result{}, &terraform.Error{Phase: "plan", Reason: "provider crashed"}
}

// A verdict the store cannot write for a while (disk full) is kept and
// written once the store is back, under the run's own id: the run stays
// running meanwhile, its workspace busy (a trigger is refused, so nothing
// runs twice), and nothing is lost.
func TestVerdictKeptWhileStoreUnavailable(t *testing.T) {
	first, longest := storeRetryFirst, storeRetryLongest
	storeRetryFirst, storeRetryLongest = 5*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { storeRetryFirst, storeRetryLongest = first, longest })

	logger := slog.New(slog.DiscardHandler)
	sq, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sq.Close() })
	st := &unavailableStore{Store: sq}
	st.fails.Store(1 << 20) // until the test says the disk has room
	m, err := New(t.Context(), Options{
		Store: st, Logger: logger, Auditor: &pipeline.Auditor{Runner: failingRunner{}, Logger: logger},
		Metrics:   metrics.New(prometheus.NewRegistry(), func() []metrics.WorkspaceSnapshot { return nil }),
		Schedule:  schedule.Options{MaxConcurrent: 1},
		Inventory: inventory{"net": {Name: "net"}},
		Incidents: &incidents{},
	})
	require.NoError(t, err)
	require.NoError(t, m.SetJobs([]schedule.Job{{Name: "net", Spec: "@daily"}}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Schedule(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	id, err := m.Trigger("net")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return st.writes.Load() >= 3 }, 10*time.Second, time.Millisecond, "retried")
	r, err := sq.Run(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, r.Status)
	_, err = m.Trigger("net")
	require.ErrorIs(t, err, schedule.ErrBusy, "the run still holds its workspace")

	st.fails.Store(0)
	require.Eventually(t, func() bool {
		r, err = sq.Run(t.Context(), id)
		return err == nil && r.Status == drift.StatusErrored
	}, 10*time.Second, time.Millisecond)
	require.Contains(t, r.Error, "provider crashed")
	runs, err := sq.Runs(t.Context(), "net", 10)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	// The manager's view follows the write it made (the store's row is
	// visible to another reader a moment before).
	require.Eventually(t, func() bool {
		state, ok := m.State("net")
		return ok && state.LastRunID == id
	}, 10*time.Second, time.Millisecond)
}
