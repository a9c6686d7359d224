package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// testQueuedRecovered: RecoverRuns errors the running runs once and
// returns the queued ones, unchanged and still queued, at every call until
// they leave the queue, which they then still can under their own id.
func testQueuedRecovered(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	run(t, s, "done", "a", 0, 1, drift.StatusDrift, fDrift)
	c := queue(t, s, queuedRun("c", "a", minutes(1)))
	require.NoError(t, s.FinishQueuedRun(ctx, cancelled(c, minutes(2))))
	r1 := start(t, s, newRun("r1", "a", minutes(3)))
	q1 := queue(t, s, queuedRun("q1", "b", minutes(2)))
	q2 := queue(t, s, queuedRun("q2", "a", minutes(4)))
	q3 := queue(t, s, queuedRun("q3", "c", minutes(5)))
	doneRun, cancelledRun := getRun(t, s, "done"), getRun(t, s, "c")
	statesBefore := states(t, s)
	queued := []store.Run{asQueued(q1), asQueued(q2), asQueued(q3)}

	at := t0.Add(time.Hour)
	got, err := s.RecoverRuns(ctx, at)
	require.NoError(t, err)
	equal(t, []store.Run{restarted(r1, at)}, got.Errored, "the running run, errored")
	require.Equal(t, []string{"q1", "q2", "q3"}, ids(got.Queued), "oldest first, by queue time")
	equal(t, queued, got.Queued, "queued runs as they read back")
	for _, want := range queued {
		equal(t, want, getRun(t, s, want.ID), "%s: a queued run stays queued, unchanged", want.ID)
	}
	equal(t, restarted(r1, at), getRun(t, s, "r1"))
	equal(t, doneRun, getRun(t, s, "done"), "finished runs are left alone")
	equal(t, cancelledRun, getRun(t, s, "c"), "cancelled runs are left alone")
	equal(t, statesBefore, states(t, s), "workspace state changed")

	// Returned again while queued; the errored run is not.
	again, err := s.RecoverRuns(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, again.Errored, "a run is errored once")
	equal(t, queued, again.Queued, "a queued run is returned until it leaves the queue")
	for _, want := range queued {
		equal(t, want, getRun(t, s, want.ID), "%s changed", want.ID)
	}

	// The errored run is finished: it leaves no queue and never starts.
	restart := r1
	restart.StartedAt = at.Add(2 * time.Minute)
	require.Error(t, s.StartQueuedRun(ctx, restart), "an errored run never starts again")
	require.Error(t, s.FinishQueuedRun(ctx, cancelled(r1, at.Add(2*time.Minute))), "nor is it cancelled")
	require.Error(t, s.DeleteQueuedRun(ctx, "r1"), "nor deleted")
	_, _, err = s.FinishRun(ctx, outcome(r1, drift.StatusClean, at.Add(2*time.Minute)))
	require.Error(t, err, "nor finished again")
	equal(t, restarted(r1, at), getRun(t, s, "r1"))

	// The daemon queues them again under their ids: q1 starts and
	// finishes, q2 is cancelled, q3 turns out to be no run at all.
	startQ1 := q1
	startQ1.StartedAt = at.Add(3 * time.Minute)
	require.NoError(t, s.StartQueuedRun(ctx, startQ1), "a recovered queued run starts under its id")
	equal(t, running(startQ1), getRun(t, s, "q1"))
	left, err := s.RecoverRuns(ctx, at.Add(4*time.Minute), "q1")
	require.NoError(t, err)
	require.Empty(t, left.Errored)
	equal(t, []store.Run{asQueued(q2), asQueued(q3)}, left.Queued, "only while still queued")
	done := outcome(running(startQ1), drift.StatusDrift, at.Add(5*time.Minute), fDrift)
	_, after := finish(t, s, done)
	require.Equal(t, "q1", after.LastRunID)
	require.True(t, after.LastRunAt.Equal(startQ1.StartedAt), "last_run_at %s, want the start", after.LastRunAt)
	equal(t, done, getRun(t, s, "q1"))

	c2 := cancelled(q2, at.Add(6*time.Minute))
	require.NoError(t, s.FinishQueuedRun(ctx, c2), "a recovered queued run can be cancelled")
	equal(t, c2, getRun(t, s, "q2"))
	require.NoError(t, s.DeleteQueuedRun(ctx, "q3"), "a recovered queued run can be deleted")
	_, err = s.Run(ctx, "q3")
	require.ErrorIs(t, err, store.ErrNotFound)

	left, err = s.RecoverRuns(ctx, at.Add(7*time.Minute))
	require.NoError(t, err)
	require.Empty(t, left.Errored, "nothing is running")
	require.Empty(t, left.Queued, "nothing is left in the queue")
	equal(t, done, getRun(t, s, "q1"))
	equal(t, c2, getRun(t, s, "q2"))
}

// testQueuedRecoverKeep: running and queued ids in keep are left as they
// are and not returned; a later call without them takes them as usual.
func testQueuedRecoverKeep(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	st := run(t, s, "done", "a", 0, 1, drift.StatusClean)
	keptRun := start(t, s, newRun("kept-running", "a", minutes(2)))
	keptQueued := queue(t, s, queuedRun("kept-queued", "a", minutes(3)))
	lostRun := start(t, s, newRun("lost-running", "b", minutes(4)))
	lostQueued := queue(t, s, queuedRun("lost-queued", "b", minutes(5)))
	doneRun := getRun(t, s, "done")

	at := t0.Add(time.Hour)
	got, err := s.RecoverRuns(ctx, at, "kept-running", "kept-queued", "done", "unknown")
	require.NoError(t, err)
	equal(t, []store.Run{restarted(lostRun, at)}, got.Errored)
	equal(t, []store.Run{asQueued(lostQueued)}, got.Queued)
	equal(t, running(keptRun), getRun(t, s, "kept-running"), "a kept running run is left running")
	equal(t, asQueued(keptQueued), getRun(t, s, "kept-queued"), "a kept queued run is left queued")
	equal(t, restarted(lostRun, at), getRun(t, s, "lost-running"))
	equal(t, asQueued(lostQueued), getRun(t, s, "lost-queued"))
	equal(t, doneRun, getRun(t, s, "done"), "a finished run in keep is left alone")
	_, err = s.Run(ctx, "unknown")
	require.ErrorIs(t, err, store.ErrNotFound, "an unknown id in keep created a run")
	equal(t, []store.WorkspaceState{st}, states(t, s), "workspace state changed")

	later := at.Add(time.Minute)
	got, err = s.RecoverRuns(ctx, later)
	require.NoError(t, err)
	equal(t, []store.Run{restarted(keptRun, later)}, got.Errored, "no longer kept: errored")
	equal(t, []store.Run{asQueued(keptQueued), asQueued(lostQueued)}, got.Queued, "no longer kept: returned, oldest first")
	equal(t, asQueued(keptQueued), getRun(t, s, "kept-queued"))
	equal(t, restarted(lostRun, at), getRun(t, s, "lost-running"), "errored once, at the first call")
	equal(t, []store.WorkspaceState{st}, states(t, s))
}

// testQueuedRestart: queued and running runs survive a restart as they
// were; RecoverRuns after it errors the running ones durably and returns
// the queued ones, after every restart, until they leave the queue.
func testQueuedRestart(t *testing.T, s QueueStore, reopen func() QueueStore) {
	ctx := t.Context()
	st := run(t, s, "done", "net", 0, 1, drift.StatusClean)
	q1 := queue(t, s, queuedRun("q1", "net", minutes(2)))
	q2 := queue(t, s, queuedRun("q2", "db", minutes(3)))
	q3 := queue(t, s, queuedRun("q3", "db", minutes(4)))
	c3 := cancelled(q3, minutes(5))
	require.NoError(t, s.FinishQueuedRun(ctx, c3))
	r1 := start(t, s, newRun("r1", "dns", minutes(6)))
	q4 := queue(t, s, queuedRun("q4", "net", minutes(7)))
	q4.StartedAt = minutes(8)
	require.NoError(t, s.StartQueuedRun(ctx, q4))
	doneRun := getRun(t, s, "done")

	s = reopen()
	equal(t, asQueued(q1), getRun(t, s, "q1"), "a queued run stays queued across a restart")
	equal(t, asQueued(q2), getRun(t, s, "q2"))
	equal(t, c3, getRun(t, s, "q3"))
	equal(t, running(r1), getRun(t, s, "r1"))
	equal(t, running(q4), getRun(t, s, "q4"))
	runs, err := s.Runs(ctx, "db", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"q3", "q2"}, ids(runs))
	equal(t, []store.WorkspaceState{st}, states(t, s))

	// The restarted daemon errors what it finds running and queues again
	// what it finds queued.
	at := t0.Add(time.Hour)
	got, err := s.RecoverRuns(ctx, at)
	require.NoError(t, err)
	errored := []store.Run{restarted(r1, at), restarted(q4, at)}
	equal(t, errored, got.Errored, "the running runs, errored, oldest first")
	equal(t, []store.Run{asQueued(q1), asQueued(q2)}, got.Queued, "the queued runs, unchanged, oldest first")

	s = reopen()
	for _, r := range errored {
		equal(t, r, getRun(t, s, r.ID), "%s: the error is durable", r.ID)
	}
	equal(t, asQueued(q1), getRun(t, s, "q1"), "still queued after another restart")
	equal(t, asQueued(q2), getRun(t, s, "q2"))
	again, err := s.RecoverRuns(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, again.Errored, "a run is errored once, across a restart")
	equal(t, []store.Run{asQueued(q1), asQueued(q2)}, again.Queued, "the same queued runs after another restart")
	equal(t, doneRun, getRun(t, s, "done"))
	equal(t, c3, getRun(t, s, "q3"))
	equal(t, []store.WorkspaceState{st}, states(t, s), "workspace state changed")

	// q1 starts under its id and finishes; q2 is still queued at the next
	// restart.
	startQ1 := q1
	startQ1.StartedAt = at.Add(2 * time.Minute)
	require.NoError(t, s.StartQueuedRun(ctx, startQ1))
	done := outcome(running(startQ1), drift.StatusClean, at.Add(3*time.Minute))
	_, after := finish(t, s, done)
	require.Equal(t, "q1", after.LastRunID)

	s = reopen()
	equal(t, done, getRun(t, s, "q1"))
	left, err := s.RecoverRuns(ctx, at.Add(4*time.Minute))
	require.NoError(t, err)
	require.Empty(t, left.Errored)
	equal(t, []store.Run{asQueued(q2)}, left.Queued, "only the run still queued")
	equal(t, asQueued(q2), getRun(t, s, "q2"))
	equal(t, []store.WorkspaceState{after}, states(t, s))
}
