package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// QueueStore is what QueueConformance tests: a store.Store (runs are
// started, finished, listed, recovered and pruned through it) that is
// also a store.QueueStore.
type QueueStore interface {
	store.Store
	store.QueueStore
}

// QueueConformance runs the store.QueueStore contract against stores from
// open, one fresh directory and store per subtest, and restarts the store
// (Close, then open on the same directory) where a case needs it.
//
// Beyond the interface's comments, the suite pins these choices:
//   - A queued run is listed with its workspace's runs by its queue time
//     and reads back with the Status RunQueued, no FinishedAt and no error,
//     tool, findings or phases; it gives its workspace no state.
//   - StartQueuedRun keeps the queued run's Trigger and moves StartedAt to
//     the start; the workspace state's LastRunAt is that start.
//   - FinishQueuedRun refuses the statuses "", queued and running and a
//     zero FinishedAt; a cancelled run is finished (Prune counts and
//     deletes it like any finished run) but is never a workspace's last
//     run.
//   - RecoverRuns returns each queued run as a queued run reads back,
//     without changing it, at every call until the run leaves the queue
//     (started, finished as queued or deleted, which it still can be);
//     running and queued ids in keep are neither changed nor returned. A
//     run it errored can be neither started, finished as queued nor
//     deleted.
//   - Of StartQueuedRun and FinishQueuedRun racing for one queued run (a
//     cancel as the scheduler dispatches it), exactly one succeeds.
func QueueConformance(t *testing.T, open Opener[QueueStore]) {
	t.Helper()
	runReopenable(t, open, []reopenTest[QueueStore]{
		{"queued run reads back as queued", testQueuedRun},
		{"queue refuses incomplete and duplicate runs", testQueueRefuses},
		{"a started queued run finishes like any run", testQueuedStarts},
		{"start without a queued run records it", testStartUnqueued},
		{"finish a queued run as cancelled", testQueuedCancelled},
		{"finish queued refuses bad outcomes and runs not queued", testFinishQueuedRefuses},
		{"finish queued without a queued run records it", testFinishUnqueued},
		{"delete a queued run", testDeleteQueued},
		{"recover runs leaves queued runs queued and errors running ones", testQueuedRecovered},
		{"recover runs keeps the queued and running runs it is told to", testQueuedRecoverKeep},
		{"prune spares queued runs", testQueuedPrune},
		{"queued runs survive restarts until they leave the queue", testQueuedRestart},
		{"start and cancel race for a queued run", testQueuedRace},
	})
}

// queuedRun is a run as the daemon queues it.
func queuedRun(id, workspace string, at time.Time) store.Run {
	return store.Run{ID: id, Workspace: workspace, Trigger: "manual", StartedAt: at}
}

// asQueued is r as a store returns it while it is queued.
func asQueued(r store.Run) store.Run {
	return store.Run{ID: r.ID, Workspace: r.Workspace, Trigger: r.Trigger, StartedAt: r.StartedAt, Status: store.RunQueued}
}

// cancelled is r as the daemon finishes it without starting.
func cancelled(r store.Run, at time.Time) store.Run {
	r.Status, r.Error, r.FinishedAt = store.RunCancelled, "cancelled by request", at
	return r
}

func queue(t *testing.T, s QueueStore, r store.Run) store.Run {
	t.Helper()
	require.NoError(t, s.QueueRun(t.Context(), r))
	return r
}

func getRun(t *testing.T, s store.Store, id string) store.Run {
	t.Helper()
	r, err := s.Run(t.Context(), id)
	require.NoError(t, err, "run %s", id)
	return r
}

func states(t *testing.T, s store.Store) []store.WorkspaceState {
	t.Helper()
	sts, err := s.Workspaces(t.Context())
	require.NoError(t, err)
	return sts
}

func testQueuedRun(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	r := queuedRun("q1", "net", t0)
	// Ignored: a queued run has no outcome yet.
	r.Status, r.FinishedAt, r.Error, r.Tool = drift.StatusDrift, minutes(5), "boom", "tofu 1.9.0"
	r.Findings, r.Phases = []drift.Finding{fDrift}, []drift.Phase{{Name: "plan", Duration: time.Second}}
	queue(t, s, r)

	want := asQueued(r)
	got := getRun(t, s, "q1")
	equal(t, want, got)
	require.True(t, got.StartedAt.Equal(t0), "started_at %s, want the queue time %s", got.StartedAt, t0)
	require.True(t, got.FinishedAt.IsZero())
	runs, err := s.Runs(ctx, "net", 0)
	require.NoError(t, err)
	equal(t, []store.Run{want}, runs)
	_, err = s.Workspace(ctx, "net")
	require.ErrorIs(t, err, store.ErrNotFound, "a queued run gives its workspace no state")
	require.Empty(t, states(t, s))
	_, _, err = s.FinishRun(ctx, outcome(r, drift.StatusClean, minutes(1)))
	require.Error(t, err, "a queued run is started before it finishes")
	equal(t, want, getRun(t, s, "q1"))

	// Listed by queue time among the workspace's other runs, and the
	// state stays the last finished run's.
	st := run(t, s, "r1", "net", 1, 2, drift.StatusClean)
	queue(t, s, queuedRun("q2", "net", minutes(3)))
	start(t, s, newRun("r3", "net", minutes(4)))
	runs, err = s.Runs(ctx, "net", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"r3", "q2", "r1", "q1"}, ids(runs))
	runs, err = s.Runs(ctx, "net", 2)
	require.NoError(t, err)
	require.Equal(t, []string{"r3", "q2"}, ids(runs))
	equal(t, []store.WorkspaceState{st}, states(t, s))
}

func testQueueRefuses(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	q1 := queue(t, s, queuedRun("q1", "net", t0))
	r1 := start(t, s, newRun("r1", "net", minutes(1)))
	done := run(t, s, "d1", "net", 2, 3, drift.StatusClean)
	for _, tc := range []struct {
		name string
		r    store.Run
	}{
		{"no id", queuedRun("", "net", t0)},
		{"no workspace", queuedRun("q2", "", t0)},
		{"no queue time", queuedRun("q2", "net", time.Time{})},
		{"id of a queued run", queuedRun("q1", "other", minutes(5))},
		{"id of a running run", queuedRun("r1", "other", minutes(5))},
		{"id of a finished run", queuedRun("d1", "other", minutes(5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.QueueRun(ctx, tc.r))
		})
	}
	equal(t, asQueued(q1), getRun(t, s, "q1"))
	r1.Status = store.RunRunning
	equal(t, r1, getRun(t, s, "r1"))
	require.Equal(t, drift.StatusClean, getRun(t, s, "d1").Status)
	runs, err := s.Runs(ctx, "other", 0)
	require.NoError(t, err)
	require.Empty(t, runs)
	_, err = s.Run(ctx, "q2")
	require.ErrorIs(t, err, store.ErrNotFound)
	equal(t, []store.WorkspaceState{done}, states(t, s))
}

func testQueuedStarts(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	q := queue(t, s, queuedRun("q1", "net", t0))

	started := q
	started.StartedAt = minutes(1)
	started.Trigger = "schedule" // the queued run's trigger stays
	require.NoError(t, s.StartQueuedRun(ctx, started))
	want := store.Run{ID: "q1", Workspace: "net", Trigger: "manual", StartedAt: minutes(1), Status: store.RunRunning}
	equal(t, want, getRun(t, s, "q1"))

	again := started
	again.StartedAt = minutes(2)
	require.Error(t, s.StartQueuedRun(ctx, again), "a run starts once")
	require.Error(t, s.FinishQueuedRun(ctx, cancelled(q, minutes(2))), "a started run is not finished as queued")
	require.Error(t, s.DeleteQueuedRun(ctx, "q1"), "a started run is not deleted as queued")
	equal(t, want, getRun(t, s, "q1"))

	done := outcome(want, drift.StatusDrift, minutes(3), fDrift)
	before, after := finish(t, s, done)
	equal(t, store.WorkspaceState{Workspace: "net"}, before)
	require.Equal(t, "q1", after.LastRunID)
	require.True(t, after.LastRunAt.Equal(minutes(1)), "last_run_at %s, want the start, not the queue time", after.LastRunAt)
	equal(t, done, getRun(t, s, "q1"))

	require.Error(t, s.StartQueuedRun(ctx, again), "a finished run never starts again")
	equal(t, done, getRun(t, s, "q1"))
}

func testStartUnqueued(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	r := store.Run{ID: "s1", Workspace: "net", Trigger: "adopted", StartedAt: t0,
		Error: "ignored", Tool: "ignored", Findings: []drift.Finding{fDrift}, Phases: []drift.Phase{{Name: "plan"}}}
	require.NoError(t, s.StartQueuedRun(ctx, r))
	want := store.Run{ID: "s1", Workspace: "net", Trigger: "adopted", StartedAt: t0, Status: store.RunRunning}
	equal(t, want, getRun(t, s, "s1"))
	require.Error(t, s.StartQueuedRun(ctx, r), "a running run starts once")
	equal(t, want, getRun(t, s, "s1"))

	q := queue(t, s, queuedRun("q1", "net", t0))
	for _, tc := range []struct {
		name string
		r    store.Run
	}{
		{"no id", newRun("", "net", minutes(1))},
		{"no workspace", newRun("s2", "", minutes(1))},
		{"no start time", newRun("s2", "net", time.Time{})},
		{"a queued run of another workspace", newRun("q1", "dns", minutes(1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.StartQueuedRun(ctx, tc.r))
		})
	}
	equal(t, asQueued(q), getRun(t, s, "q1"))
	_, err := s.Run(ctx, "s2")
	require.ErrorIs(t, err, store.ErrNotFound)
	runs, err := s.Runs(ctx, "dns", 0)
	require.NoError(t, err)
	require.Empty(t, runs)
}

func testQueuedCancelled(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	st := run(t, s, "r0", "net", 0, 1, drift.StatusDrift, fDrift)
	q := queue(t, s, queuedRun("q1", "net", minutes(2)))
	c := cancelled(q, minutes(3))
	require.NoError(t, s.FinishQueuedRun(ctx, c))

	got := getRun(t, s, "q1")
	equal(t, c, got)
	require.True(t, got.StartedAt.Equal(minutes(2)), "started_at stays the queue time")
	require.True(t, got.FinishedAt.Equal(minutes(3)))
	equal(t, []store.WorkspaceState{st}, states(t, s), "a cancelled run changes no workspace state")

	require.Error(t, s.FinishQueuedRun(ctx, cancelled(q, minutes(4))), "a run is finished once")
	restart := q
	restart.StartedAt = minutes(4)
	require.Error(t, s.StartQueuedRun(ctx, restart), "a cancelled run never starts")
	_, _, err := s.FinishRun(ctx, outcome(restart, drift.StatusClean, minutes(5)))
	require.Error(t, err, "a cancelled run is not finished as a started one")
	require.Error(t, s.DeleteQueuedRun(ctx, "q1"), "a cancelled run is kept")
	equal(t, c, getRun(t, s, "q1"))
	equal(t, []store.WorkspaceState{st}, states(t, s))

	runs, err := s.Runs(ctx, "net", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"q1", "r0"}, ids(runs))
}

func testFinishQueuedRefuses(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	q := queue(t, s, queuedRun("q1", "net", t0))
	with := func(status drift.Status, at time.Time) store.Run {
		r := q
		r.Status, r.FinishedAt, r.Error = status, at, "why"
		return r
	}
	noID, noWorkspace, noStart := cancelled(q, minutes(1)), cancelled(q, minutes(1)), cancelled(q, minutes(1))
	noID.ID, noWorkspace.Workspace, noStart.StartedAt = "", "", time.Time{}
	for _, tc := range []struct {
		name string
		r    store.Run
	}{
		{"empty status", with("", minutes(1))},
		{"queued", with(store.RunQueued, minutes(1))},
		{"running", with(store.RunRunning, minutes(1))},
		{"no finish time", with(store.RunCancelled, time.Time{})},
		{"no id", noID},
		{"no workspace", noWorkspace},
		{"no queue time", noStart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.FinishQueuedRun(ctx, tc.r))
		})
	}
	equal(t, asQueued(q), getRun(t, s, "q1"))

	r1 := start(t, s, newRun("r1", "net", minutes(1)))
	require.Error(t, s.FinishQueuedRun(ctx, cancelled(r1, minutes(2))), "a running run is not finished as queued")
	require.Equal(t, store.RunRunning, getRun(t, s, "r1").Status)

	run(t, s, "d1", "net", 3, 4, drift.StatusClean)
	d1 := getRun(t, s, "d1")
	require.Error(t, s.FinishQueuedRun(ctx, cancelled(newRun("d1", "net", minutes(3)), minutes(5))), "a finished run is not finished again")
	equal(t, d1, getRun(t, s, "d1"))
}

func testFinishUnqueued(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	// Its QueueRun failed: the cancel still records it.
	lost := cancelled(store.Run{ID: "lost", Workspace: "db", Trigger: "schedule", StartedAt: t0}, minutes(1))
	require.NoError(t, s.FinishQueuedRun(ctx, lost))
	equal(t, lost, getRun(t, s, "lost"))
	runs, err := s.Runs(ctx, "db", 0)
	require.NoError(t, err)
	equal(t, []store.Run{lost}, runs)
	_, err = s.Workspace(ctx, "db")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Error(t, s.FinishQueuedRun(ctx, lost), "a run is finished once")
	require.Error(t, s.QueueRun(ctx, queuedRun("lost", "db", minutes(2))), "its id is taken")
	equal(t, lost, getRun(t, s, "lost"))
}

func testDeleteQueued(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	queue(t, s, queuedRun("q1", "net", t0))
	q2 := queue(t, s, queuedRun("q2", "net", minutes(1)))
	require.NoError(t, s.DeleteQueuedRun(ctx, "q1"))
	_, err := s.Run(ctx, "q1")
	require.ErrorIs(t, err, store.ErrNotFound)
	runs, err := s.Runs(ctx, "net", 0)
	require.NoError(t, err)
	equal(t, []store.Run{asQueued(q2)}, runs)
	require.Error(t, s.DeleteQueuedRun(ctx, "q1"), "deleted once")
	require.Error(t, s.DeleteQueuedRun(ctx, "nope"), "unknown")

	r1 := start(t, s, newRun("r1", "net", minutes(2)))
	require.NoError(t, s.FinishQueuedRun(ctx, cancelled(q2, minutes(3))))
	run(t, s, "d1", "net", 4, 5, drift.StatusClean)
	for _, id := range []string{"r1", "q2", "d1"} {
		before := getRun(t, s, id)
		require.Error(t, s.DeleteQueuedRun(ctx, id), "%s is not queued", id)
		equal(t, before, getRun(t, s, id), "%s changed", id)
	}
	require.Equal(t, store.RunRunning, getRun(t, s, r1.ID).Status)
	// The id of a deleted run is free again.
	queue(t, s, queuedRun("q1", "dns", minutes(6)))
	require.Equal(t, "dns", getRun(t, s, "q1").Workspace)
}

// running is r as a store returns it while it runs.
func running(r store.Run) store.Run {
	r.Status = store.RunRunning
	return r
}

func testQueuedPrune(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	queue(t, s, queuedRun("aq", "a", t0)) // older than every finished run
	for i := 1; i <= 3; i++ {
		run(t, s, fmt.Sprintf("a%d", i), "a", 2*i-1, 2*i, drift.StatusClean)
	}
	ac := queue(t, s, queuedRun("ac", "a", minutes(7)))
	require.NoError(t, s.FinishQueuedRun(ctx, cancelled(ac, minutes(8))))

	prune := func(keep int, older time.Time, want int, wantA []string) {
		t.Helper()
		n, err := s.Prune(ctx, keep, older)
		require.NoError(t, err)
		require.Equal(t, want, n, "prune(%d, %s)", keep, older)
		runs, err := s.Runs(ctx, "a", 0)
		require.NoError(t, err)
		require.Equal(t, wantA, ids(runs))
	}
	// The cancelled ac is the newest finished run; a3 is the state's; the
	// queued aq neither counts towards keep nor is deleted.
	prune(1, time.Time{}, 2, []string{"ac", "a3", "aq"})
	prune(0, minutes(10_000), 1, []string{"a3", "aq"})
	require.Equal(t, store.RunQueued, getRun(t, s, "aq").Status)
}

func testQueuedRace(t *testing.T, s QueueStore, _ func() QueueStore) {
	ctx := t.Context()
	const (
		workers   = 8
		perWorker = 6
	)
	type result struct {
		id                 string
		started, cancelled bool
	}
	var (
		wg      sync.WaitGroup
		results = make([][]result, workers)
		errs    = make([]error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			errs[w] = func() error {
				ws := fmt.Sprintf("ws-%02d", w)
				for i := range perWorker {
					q := queuedRun(fmt.Sprintf("%s-%02d", ws, i), ws, minutes(i))
					if err := s.QueueRun(ctx, q); err != nil {
						return err
					}
					// The dispatcher starts it as a cancel arrives.
					var race sync.WaitGroup
					var startErr, cancelErr error
					race.Go(func() {
						r := q
						r.StartedAt = minutes(i).Add(time.Second)
						startErr = s.StartQueuedRun(ctx, r)
					})
					race.Go(func() { cancelErr = s.FinishQueuedRun(ctx, cancelled(q, minutes(i).Add(time.Second))) })
					race.Wait()
					results[w] = append(results[w], result{id: q.ID, started: startErr == nil, cancelled: cancelErr == nil})
					if startErr == nil {
						if _, _, err := s.FinishRun(ctx, outcome(q, drift.StatusClean, minutes(i+1))); err != nil {
							return err
						}
					}
					if _, err := s.Runs(ctx, ws, 2); err != nil {
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
	for w := range workers {
		for _, r := range results[w] {
			require.NotEqual(t, r.started, r.cancelled, "%s: started %v, cancelled %v: exactly one must win", r.id, r.started, r.cancelled)
			want := store.RunCancelled
			if r.started {
				want = drift.StatusClean
			}
			require.Equal(t, want, getRun(t, s, r.id).Status, r.id)
		}
		runs, err := s.Runs(ctx, fmt.Sprintf("ws-%02d", w), 0)
		require.NoError(t, err)
		require.Len(t, runs, perWorker)
	}
	left, err := s.RecoverRuns(ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, left.Errored, "no run was left running")
	require.Empty(t, left.Queued, "no run was left queued")
}
