package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

func testConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const (
		workers   = 16
		perWorker = 8
	)
	var (
		mu            sync.Mutex
		sharedBefores []int
		wg            sync.WaitGroup
		errs          = make([]error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			errs[w] = func() error {
				own := fmt.Sprintf("own-%02d", w)
				for i := range perWorker {
					// Its own workspace: alternating clean and drift.
					r := newRun(fmt.Sprintf("%s-%02d", own, i), own, minutes(i))
					if err := s.StartRun(ctx, r); err != nil {
						return err
					}
					status, fs := drift.StatusClean, []drift.Finding(nil)
					if i%2 == 1 {
						status, fs = drift.StatusDrift, []drift.Finding{fDrift}
					}
					if _, _, err := s.FinishRun(ctx, outcome(r, status, minutes(i+1), fs...)); err != nil {
						return err
					}
					// The shared workspace: every run errors, so its
					// ConsecutiveErrors counts every FinishRun.
					shared := newRun(fmt.Sprintf("shared-%02d-%02d", w, i), "shared", minutes(i))
					if err := s.StartRun(ctx, shared); err != nil {
						return err
					}
					before, _, err := s.FinishRun(ctx, outcome(shared, drift.StatusErrored, minutes(i+1)))
					if err != nil {
						return err
					}
					mu.Lock()
					sharedBefores = append(sharedBefores, before.ConsecutiveErrors)
					mu.Unlock()
					// Readers alongside the writers.
					if _, err := s.Runs(ctx, own, 3); err != nil {
						return err
					}
					if _, err := s.Workspace(ctx, "shared"); err != nil {
						return err
					}
					if _, err := s.Workspaces(ctx); err != nil {
						return err
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "worker %d", w)
	}

	const total = workers * perWorker
	st, err := s.Workspace(ctx, "shared")
	require.NoError(t, err)
	require.Equal(t, total, st.ConsecutiveErrors, "a FinishRun was lost or not atomic")
	// Each FinishRun saw the one before it: the counts are 0..total-1, once
	// each.
	slices.Sort(sharedBefores)
	want := make([]int, total)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, sharedBefores)

	runs, err := s.Runs(ctx, "shared", 0)
	require.NoError(t, err)
	require.Len(t, runs, total)
	states, err := s.Workspaces(ctx)
	require.NoError(t, err)
	require.Len(t, states, workers+1)
	for w := range workers {
		own := fmt.Sprintf("own-%02d", w)
		runs, err := s.Runs(ctx, own, 0)
		require.NoError(t, err)
		require.Len(t, runs, perWorker)
		st, err := s.Workspace(ctx, own)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%s-%02d", own, perWorker-1), st.LastRunID)
		require.Equal(t, drift.StatusDrift, st.Status)
		require.Equal(t, drift.Fingerprint(own, []drift.Finding{fDrift}), st.Fingerprint)
	}
}
