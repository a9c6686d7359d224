package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// restarted is r as RecoverRuns finishes it: errored at at by a restart,
// every other field kept.
func restarted(r store.Run, at time.Time) store.Run {
	r.Status, r.FinishedAt, r.Error = drift.StatusErrored, at, store.RunRestartedError
	return r
}

// testRecoverRuns: the runs a previous process left running are finished
// errored with store.RunRestartedError, returned oldest first and once;
// finished runs and workspace states are left alone.
func testRecoverRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	run(t, s, "done", "a", 0, 1, drift.StatusDrift, fDrift)
	run(t, s, "failed", "a", 1, 2, drift.StatusErrored)
	r1 := newRun("r1", "a", minutes(3))
	r1.Tool, r1.Phases = "terraform 1.11.4", []drift.Phase{{Name: "init", Duration: time.Second}}
	r1 = start(t, s, r1)
	r2 := start(t, s, newRun("r2", "b", minutes(2)))
	doneRun, failedRun := getRun(t, s, "done"), getRun(t, s, "failed")
	statesBefore := states(t, s)

	_, err := s.RecoverRuns(ctx, time.Time{})
	require.Error(t, err, "a zero time is refused")
	equal(t, running(r1), getRun(t, s, "r1"), "a refused recovery changed a run")
	equal(t, running(r2), getRun(t, s, "r2"), "a refused recovery changed a run")

	at := t0.Add(time.Hour)
	got, err := s.RecoverRuns(ctx, at)
	require.NoError(t, err)
	require.Empty(t, got.Queued, "no run was queued")
	require.Equal(t, []string{"r2", "r1"}, ids(got.Errored), "oldest first")
	for i, want := range []store.Run{restarted(r2, at), restarted(r1, at)} {
		equal(t, want, got.Errored[i])
		require.True(t, got.Errored[i].FinishedAt.Equal(at), "%s: finished_at %s, want %s", want.ID, got.Errored[i].FinishedAt, at)
		equal(t, want, getRun(t, s, want.ID), "%s as stored", want.ID)
	}
	equal(t, doneRun, getRun(t, s, "done"), "finished runs are left alone")
	equal(t, failedRun, getRun(t, s, "failed"), "errored runs are left alone")
	equal(t, statesBefore, states(t, s), "workspace state changed")
	_, err = s.Workspace(ctx, "b")
	require.ErrorIs(t, err, store.ErrNotFound, "a restart gives no workspace a state")

	again, err := s.RecoverRuns(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, again.Errored, "a run is errored once")
	require.Empty(t, again.Queued)
	equal(t, restarted(r1, at), getRun(t, s, "r1"), "a second call moved the finish")

	_, _, err = s.FinishRun(ctx, outcome(r1, drift.StatusClean, at))
	require.Error(t, err, "a run errored by a restart cannot be finished")
	equal(t, restarted(r1, at), getRun(t, s, "r1"))
	equal(t, statesBefore, states(t, s), "a refused finish changed the state")
}

// testRecoverRunsKeep: running runs named in keep (an adopted Job's) stay
// running, are not returned and finish later like any running run, until a
// call that does not keep them; unknown and finished ids in keep change
// nothing.
func testRecoverRunsKeep(t *testing.T, s store.Store) {
	ctx := t.Context()
	run(t, s, "done", "a", 0, 1, drift.StatusDrift, fDrift)
	kept := start(t, s, newRun("kept", "a", minutes(2)))
	lost := start(t, s, newRun("lost", "b", minutes(3)))
	doneRun := getRun(t, s, "done")
	statesBefore := states(t, s)

	at := t0.Add(time.Hour)
	got, err := s.RecoverRuns(ctx, at, "kept", "done", "unknown")
	require.NoError(t, err)
	require.Empty(t, got.Queued)
	equal(t, []store.Run{restarted(lost, at)}, got.Errored)
	equal(t, restarted(lost, at), getRun(t, s, "lost"))
	equal(t, running(kept), getRun(t, s, "kept"), "a kept run is left running")
	equal(t, doneRun, getRun(t, s, "done"), "a finished run in keep is left alone")
	_, err = s.Run(ctx, "unknown")
	require.ErrorIs(t, err, store.ErrNotFound, "an unknown id in keep created a run")
	equal(t, statesBefore, states(t, s), "workspace state changed")

	// Kept again at the next start: still running.
	again, err := s.RecoverRuns(ctx, at.Add(time.Minute), "kept")
	require.NoError(t, err)
	require.Empty(t, again.Errored)
	require.Empty(t, again.Queued)
	equal(t, running(kept), getRun(t, s, "kept"))

	_, after := finish(t, s, outcome(kept, drift.StatusClean, at.Add(2*time.Minute)))
	require.Equal(t, "kept", after.LastRunID, "a kept run finishes as usual")

	again, err = s.RecoverRuns(ctx, at.Add(3*time.Minute))
	require.NoError(t, err)
	require.Empty(t, again.Errored, "nothing left to recover")
	require.Empty(t, again.Queued)

	// A run kept once and not kept at a later start is errored then.
	adopted := start(t, s, newRun("adopted", "c", at.Add(4*time.Minute)))
	_, err = s.RecoverRuns(ctx, at.Add(5*time.Minute), "adopted")
	require.NoError(t, err)
	later, err := s.RecoverRuns(ctx, at.Add(6*time.Minute))
	require.NoError(t, err)
	require.Empty(t, later.Queued)
	equal(t, []store.Run{restarted(adopted, at.Add(6*time.Minute))}, later.Errored)
	equal(t, restarted(adopted, at.Add(6*time.Minute)), getRun(t, s, "adopted"))
}
