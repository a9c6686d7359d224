package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// After a restart, a run the previous process was running is recorded
// errored ("daemon restarted") and its workspace runs again under a new
// id; a run it had queued is queued again under its own id, keeps its
// queue time and trigger, and runs; one of a workspace no longer
// configured ends cancelled.
func TestRecoverAfterRestart(t *testing.T) {
	d, br := newTestManager(t)
	ctx := t.Context()
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	require.NoError(t, d.st.StartRun(ctx, store.Run{ID: "was-running", Workspace: "net", Trigger: "schedule", StartedAt: t0}))
	require.NoError(t, d.st.QueueRun(ctx, store.Run{ID: "was-queued", Workspace: "db", Trigger: "schedule", StartedAt: t0.Add(time.Minute)}))
	require.NoError(t, d.st.QueueRun(ctx, store.Run{ID: "gone", Workspace: "removed", Trigger: "manual", StartedAt: t0.Add(2 * time.Minute)}))

	require.NoError(t, d.Recover(ctx))

	r, err := d.st.Run(ctx, "was-running")
	require.NoError(t, err)
	require.Equal(t, drift.StatusErrored, r.Status)
	require.Equal(t, store.RunRestartedError, r.Error)
	require.Contains(t, r.Error, "daemon restarted")

	r = waitRun(t, d, "gone", store.RunCancelled)
	require.Equal(t, "the workspace was removed from the config while the run was queued", r.Error)

	// The queued run was queued first: it takes the one slot, under its id.
	r = waitRun(t, d, "was-queued", store.RunRunning)
	require.Equal(t, "schedule", r.Trigger)
	require.Eventually(t, func() bool { _, started := br.State("was-queued"); return started }, 10*time.Second, time.Millisecond)
	log := string(d.Live("was-queued").Bytes())
	require.True(t, strings.HasPrefix(log, "== queued (trigger schedule) at "+t0.Add(time.Minute).Format(time.RFC3339)+
		" by a previous daemon process; queued again after its restart: waiting for a run slot ==\n== started after "), log)

	// The errored run's workspace runs again, under a new id.
	runs, err := d.st.Runs(ctx, "net", 0)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, "rerun", runs[0].Trigger)
	require.Equal(t, store.RunQueued, runs[0].Status, "behind the queued run")
	require.NotEqual(t, "was-running", runs[0].ID)

	// A second restart finds nothing more to error, and no queued run twice.
	rec, err := d.st.RecoverRuns(ctx, time.Now(), "was-queued")
	require.NoError(t, err)
	require.Empty(t, rec.Errored)
	require.Len(t, rec.Queued, 1)
	require.Equal(t, runs[0].ID, rec.Queued[0].ID)
}

// A workspace whose Job a previous daemon started is busy while that Job
// is awaited: a run of it left queued ends cancelled, and an errored one
// is not run again (the Job's outcome is its result).
func TestRecoverSkipsAdoptedWorkspaces(t *testing.T) {
	d, br := newTestManager(t)
	ctx := t.Context()
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	require.NoError(t, d.st.QueueRun(ctx, store.Run{ID: "queued", Workspace: "db", Trigger: "schedule", StartedAt: t0}))
	require.NoError(t, d.st.StartRun(ctx, store.Run{ID: "old", Workspace: "db", Trigger: "schedule", StartedAt: t0.Add(-time.Minute)}))
	require.NoError(t, d.st.StartRun(ctx, store.Run{ID: "adopted", Workspace: "db", Trigger: "manual", StartedAt: t0.Add(time.Minute)}))
	d.Adopting([]Adopted{{Workspace: "db", RunID: "adopted", Job: "driftwatch-db-1"}})

	require.NoError(t, d.Recover(ctx, "adopted"))

	r := waitRun(t, d, "queued", store.RunCancelled)
	require.Equal(t, "a Job of the workspace that the previous daemon process started was still running", r.Error)
	r = waitRun(t, d, "old", drift.StatusErrored)
	require.Equal(t, store.RunRestartedError, r.Error)
	waitRun(t, d, "adopted", store.RunRunning)
	runs, err := d.st.Runs(ctx, "db", 0)
	require.NoError(t, err)
	require.Len(t, runs, 3, "no re-run while the adopted Job runs")
	_, started := br.State("queued")
	require.False(t, started)
}

// A workspace never checked whose first run is an adopted Job gets no
// initial run: the Job's outcome is its first check (a queued run would
// only be skipped, after showing as queued).
func TestInitialRunsLeaveAdoptedWorkspacesOut(t *testing.T) {
	d, _ := newTestManager(t)
	ctx := t.Context()
	require.NoError(t, d.st.StartRun(ctx, store.Run{ID: "adopted", Workspace: "db", Trigger: "initial", StartedAt: time.Now().UTC()}))
	d.Adopting([]Adopted{{Workspace: "db", RunID: "adopted", Job: "driftwatch-db-1"}})
	require.NoError(t, d.Recover(ctx, "adopted"))
	d.QueueUnchecked([]string{"db", "net"})
	runs, err := d.st.Runs(ctx, "db", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1, "only the adopted Job's run: %+v", runs)
	runs, err = d.st.Runs(ctx, "net", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, "initial", runs[0].Trigger, "a workspace never checked still gets its initial run")
}

// A detection asked for outside the queue while the daemon stops (a
// remediation's verification) starts nothing: it is recorded queued, and
// the next start runs it under its id.
func TestDetectWhileStoppingQueuesForNextStart(t *testing.T) {
	d, _ := newTestManager(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d.Detect(ctx, "net", "verify")
	runs, err := d.st.Runs(t.Context(), "net", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunQueued, runs[0].Status)
	require.Equal(t, "verify", runs[0].Trigger)

	rec, err := d.st.RecoverRuns(t.Context(), time.Now())
	require.NoError(t, err)
	require.Len(t, rec.Queued, 1, "the next start queues it again")
	require.Equal(t, runs[0].ID, rec.Queued[0].ID)
}
