package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

func testPruneKeep(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		run(t, s, fmt.Sprintf("a%d", i), "a", i, i+1, drift.StatusClean)
	}
	start(t, s, newRun("a6", "a", minutes(6)))
	run(t, s, "b1", "b", 1, 2, drift.StatusClean)
	run(t, s, "b2", "b", 2, 3, drift.StatusClean)

	prune := func(keep int, older time.Time, want int, wantA, wantB []string) {
		t.Helper()
		n, err := s.Prune(ctx, keep, older)
		require.NoError(t, err)
		require.Equal(t, want, n, "prune(%d, %s)", keep, older)
		ra, err := s.Runs(ctx, "a", 0)
		require.NoError(t, err)
		rb, err := s.Runs(ctx, "b", 0)
		require.NoError(t, err)
		require.Equal(t, wantA, ids(ra))
		require.Equal(t, wantB, ids(rb))
	}
	prune(0, time.Time{}, 0, []string{"a6", "a5", "a4", "a3", "a2", "a1"}, []string{"b2", "b1"})
	// The running a6 neither counts towards keep nor is deleted.
	prune(2, time.Time{}, 3, []string{"a6", "a5", "a4"}, []string{"b2", "b1"})
	prune(2, time.Time{}, 0, []string{"a6", "a5", "a4"}, []string{"b2", "b1"})
	prune(1, time.Time{}, 2, []string{"a6", "a5"}, []string{"b2"})

	_, err := s.Run(ctx, "a1")
	require.ErrorIs(t, err, store.ErrNotFound)
	for _, ws := range []string{"a", "b"} {
		st, err := s.Workspace(ctx, ws)
		require.NoError(t, err)
		_, err = s.Run(ctx, st.LastRunID)
		require.NoError(t, err, "workspace %s: its last run was pruned", ws)
	}
}

func testPruneAge(t *testing.T, s store.Store) {
	ctx := t.Context()
	run(t, s, "a1", "a", 0, 60, drift.StatusClean)
	run(t, s, "a2", "a", 61, 120, drift.StatusClean)
	run(t, s, "a3", "a", 121, 180, drift.StatusClean)
	run(t, s, "b1", "b", 0, 10, drift.StatusClean)
	run(t, s, "b2", "b", 11, 20, drift.StatusClean)

	n, err := s.Prune(ctx, 0, minutes(120))
	require.NoError(t, err)
	require.Equal(t, 1+1, n, "a1 and b1 finished before the cutoff; a2 finished at it; b2 is b's state")
	// Age applies even within keep.
	n, err = s.Prune(ctx, 10, minutes(1000))
	require.NoError(t, err)
	require.Equal(t, 1, n, "a2; a3 and b2 are the states' runs")

	ra, err := s.Runs(ctx, "a", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a3"}, ids(ra))
	rb, err := s.Runs(ctx, "b", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b2"}, ids(rb))
}

func testPruneSpares(t *testing.T, s store.Store) {
	ctx := t.Context()
	// c1 is errored by a restart: finished, prunable.
	start(t, s, newRun("c1", "c", t0))
	recovered, err := s.RecoverRuns(ctx, minutes(1))
	require.NoError(t, err)
	require.Equal(t, []string{"c1"}, ids(recovered.Errored))

	// a2 started after a1 but finished first, so the state points at the
	// older a1.
	a1 := start(t, s, newRun("a1", "a", minutes(1)))
	a2 := start(t, s, newRun("a2", "a", minutes(2)))
	finish(t, s, outcome(a2, drift.StatusClean, minutes(3)))
	finish(t, s, outcome(a1, drift.StatusDrift, minutes(4), fDrift))
	start(t, s, newRun("a3", "a", minutes(5)))
	st, err := s.Workspace(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a1", st.LastRunID)

	n, err := s.Prune(ctx, 1, minutes(10_000))
	require.NoError(t, err)
	require.Equal(t, 2, n, "a2 and c1")
	ra, err := s.Runs(ctx, "a", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a3", "a1"}, ids(ra))
	rc, err := s.Runs(ctx, "c", 0)
	require.NoError(t, err)
	require.Empty(t, rc)
}
