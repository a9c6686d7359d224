package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestQueuedRuns(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "dw.db"))
	t0 := time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC)
	queue := func(id string, at time.Time) store.Run {
		r := store.Run{ID: id, Workspace: "net", Trigger: "manual", StartedAt: at}
		require.NoError(t, s.QueueRun(ctx, r))
		return r
	}
	get := func(id string) store.Run {
		r, err := s.Run(ctx, id)
		require.NoError(t, err)
		return r
	}

	// Queued, then started: the start time replaces the queue time.
	started := queue("q-start", t0)
	require.Equal(t, store.Run{ID: "q-start", Workspace: "net", Trigger: "manual", StartedAt: t0, Status: store.RunQueued,
		Findings: []drift.Finding{}, Phases: []drift.Phase{}}, get("q-start"))
	require.ErrorContains(t, s.QueueRun(ctx, started), `queue run "q-start": a run with this id already exists`)
	started.StartedAt = t0.Add(time.Minute)
	require.NoError(t, s.StartQueuedRun(ctx, started))
	got := get("q-start")
	require.Equal(t, store.RunRunning, got.Status)
	require.Equal(t, t0.Add(time.Minute), got.StartedAt)
	require.ErrorContains(t, s.StartQueuedRun(ctx, started), "the run is not queued", "started twice")
	started.FinishedAt, started.Status = t0.Add(2*time.Minute), drift.StatusClean
	_, after, err := s.FinishRun(ctx, started)
	require.NoError(t, err, "a started queued run finishes like any run")
	require.Equal(t, "q-start", after.LastRunID)

	// Queued, then cancelled before it started: no workspace state change.
	cancelled := queue("q-cancel", t0.Add(3*time.Minute))
	cancelled.Status, cancelled.Error, cancelled.FinishedAt = store.RunCancelled, "cancelled by request", t0.Add(4*time.Minute)
	require.NoError(t, s.FinishQueuedRun(ctx, cancelled))
	got = get("q-cancel")
	require.Equal(t, store.RunCancelled, got.Status)
	require.Equal(t, "cancelled by request", got.Error)
	require.Equal(t, t0.Add(3*time.Minute), got.StartedAt, "StartedAt stays the queue time")
	require.Equal(t, t0.Add(4*time.Minute), got.FinishedAt)
	require.ErrorContains(t, s.FinishQueuedRun(ctx, cancelled), "not queued", "twice")
	require.ErrorContains(t, s.StartQueuedRun(ctx, cancelled), "not queued", "a cancelled run never starts")
	require.Equal(t, store.RunCancelled, get("q-cancel").Status)
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	require.Equal(t, after, st)

	// A started run is not finished as queued.
	running := store.Run{ID: "fresh", Workspace: "net", Trigger: "adopted", StartedAt: t0.Add(5 * time.Minute)}
	require.NoError(t, s.StartQueuedRun(ctx, running), "a run that was never queued is recorded as new")
	require.Equal(t, store.RunRunning, get("fresh").Status)
	running.Status, running.FinishedAt = store.RunCancelled, t0.Add(6*time.Minute)
	require.ErrorContains(t, s.FinishQueuedRun(ctx, running), "not queued")
	require.Equal(t, store.RunRunning, get("fresh").Status)

	// Its QueueRun lost: the cancel still records it.
	lost := store.Run{ID: "lost", Workspace: "db", Trigger: "schedule", StartedAt: t0, FinishedAt: t0.Add(time.Second),
		Status: store.RunCancelled, Error: "cancelled by request"}
	require.NoError(t, s.FinishQueuedRun(ctx, lost))
	require.Equal(t, store.Run{ID: "lost", Workspace: "db", Trigger: "schedule", StartedAt: t0, FinishedAt: t0.Add(time.Second),
		Status: store.RunCancelled, Error: "cancelled by request", Findings: []drift.Finding{}, Phases: []drift.Phase{}}, get("lost"))

	// A skipped one is deleted; only a queued one.
	skipped := queue("q-skip", t0)
	skipped.Status, skipped.FinishedAt = store.RunCancelled, t0.Add(time.Second)
	require.ErrorContains(t, s.FinishRunOnly(ctx, skipped), "not a running run", "a queued run is started before it finishes")
	require.Equal(t, store.RunQueued, get("q-skip").Status)
	require.NoError(t, s.DeleteQueuedRun(ctx, "q-skip"))
	_, err = s.Run(ctx, "q-skip")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorContains(t, s.DeleteQueuedRun(ctx, "q-skip"), "no queued run has this id")
	require.ErrorContains(t, s.DeleteQueuedRun(ctx, "fresh"), "no queued run has this id")
	require.Equal(t, store.RunRunning, get("fresh").Status)

	require.ErrorContains(t, s.FinishQueuedRun(ctx, store.Run{ID: "x", Workspace: "net", StartedAt: t0, Status: store.RunQueued, FinishedAt: t0}),
		"a finished status and finished_at are required")
	require.ErrorContains(t, s.QueueRun(ctx, store.Run{ID: "x", Workspace: "net"}), "started_at is required")
}

// A queued run the process died with stays queued across a reopen: the
// next start gets it back from RecoverRuns (at every call, until it leaves
// the queue) and starts it under its id; the running run is errored once.
// Prune never deletes a queued run.
func TestQueuedRunRecoveredAtRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "dw.db")
	s := openStore(t, path)
	t0 := time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC)
	require.NoError(t, s.StartRun(ctx, store.Run{ID: "running", Workspace: "net", Trigger: "schedule", StartedAt: t0}))
	queued := store.Run{ID: "queued", Workspace: "db", Trigger: "manual", StartedAt: t0.Add(time.Second)}
	require.NoError(t, s.QueueRun(ctx, queued))
	n, err := s.Prune(ctx, 1, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, s.Close())

	s = openStore(t, path)
	at := t0.Add(time.Hour)
	got, err := s.RecoverRuns(ctx, at)
	require.NoError(t, err)
	require.Equal(t, store.Recovered{
		Errored: []store.Run{{ID: "running", Workspace: "net", Trigger: "schedule", StartedAt: t0, FinishedAt: at,
			Status: drift.StatusErrored, Error: store.RunRestartedError}},
		Queued: []store.Run{{ID: "queued", Workspace: "db", Trigger: "manual", StartedAt: t0.Add(time.Second),
			Status: store.RunQueued, Findings: []drift.Finding{}, Phases: []drift.Phase{}}},
	}, got)
	for _, r := range append(got.Errored, got.Queued...) {
		stored, err := s.Run(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r, stored)
	}
	_, err = s.Workspace(ctx, "net")
	require.ErrorIs(t, err, store.ErrNotFound, "a restart gives no workspace a state")
	require.NoError(t, s.Close())

	// Another restart before the queued run ran: the same queued run, no
	// errored one.
	s = openStore(t, path)
	again, err := s.RecoverRuns(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, again.Errored)
	require.Equal(t, got.Queued, again.Queued)
	stored, err := s.Run(ctx, "running")
	require.NoError(t, err)
	require.Equal(t, got.Errored[0], stored, "errored once, durably")

	queued.StartedAt = at.Add(2 * time.Minute)
	require.NoError(t, s.StartQueuedRun(ctx, queued), "started under its id")
	stored, err = s.Run(ctx, "queued")
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, stored.Status)
	require.Equal(t, queued.StartedAt, stored.StartedAt)
	left, err := s.RecoverRuns(ctx, at.Add(3*time.Minute), "queued")
	require.NoError(t, err)
	require.Equal(t, store.Recovered{}, left, "nothing queued any more; the running one is kept")
}
