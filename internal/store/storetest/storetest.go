package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Conformance runs the store.Store contract against stores from open, one
// fresh store per subtest. open must return an empty store and close it when
// the test ends (t.Cleanup).
//
// Beyond the interface's comments, the suite pins these choices: finishing
// an unknown run is store.ErrNotFound, finishing a run twice (or one
// MarkInterrupted took) is an error, Since is the FinishedAt of the run that
// changed the status, Runs of an unknown workspace is empty (not an error),
// and Prune's keep 0 means no count limit.
func Conformance(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"started run reads back as running", testStartedRun},
		{"unknown ids are not found", testNotFound},
		{"start refuses incomplete and duplicate runs", testStartRefuses},
		{"finish refuses bad outcomes and a second finish", testFinishRefuses},
		{"first finish creates the state", testFirstFinish},
		{"since moves only when the status changes", testSince},
		{"errored run keeps findings and fingerprint", testErroredKeepsFindings},
		{"first run errored", testFirstRunErrored},
		{"runs are listed newest first", testRunsOrder},
		{"workspaces are listed by name", testWorkspacesOrder},
		{"mark interrupted", testMarkInterrupted},
		{"mark interrupted keeps the runs it is told to", testMarkInterruptedKeep},
		{"prune keeps the newest runs per workspace", testPruneKeep},
		{"prune by age", testPruneAge},
		{"prune spares running runs and the state's run", testPruneSpares},
		{"concurrent use", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// t0 has nanoseconds and a zone other than UTC: times must round-trip as
// instants (time.Equal), whatever the zone they come back in.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))

var (
	fDrift = drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update",
		Attributes: []string{"tags.owner", "versioning"}}
	fPending = drift.Finding{Kind: drift.KindPending, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "create",
		Attributes: []string{}}
	fNoise     = drift.Finding{Kind: drift.KindNoise, Address: "data.aws_caller_identity.me", Type: "aws_caller_identity", Action: "read"}
	fForbidden = drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_deployment.app", Type: "kubernetes_deployment",
		Action: "no-op", SeenIn: []string{drift.SeenInConfig, drift.SeenInState}}
	fIgnored = drift.Finding{Kind: drift.KindDrift, Address: "aws_instance.bastion", Type: "aws_instance", Action: "update",
		Attributes: []string{"ami"}, Ignored: true}
)

func minutes(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }

// newRun is a run as the pipeline starts it.
func newRun(id, workspace string, start time.Time) store.Run {
	return store.Run{ID: id, Workspace: workspace, Trigger: "schedule", StartedAt: start}
}

// outcome is r as the pipeline finishes it.
func outcome(r store.Run, status drift.Status, at time.Time, fs ...drift.Finding) store.Run {
	r.Status = status
	r.FinishedAt = at
	r.Findings = fs
	r.Tool = "terraform 1.11.4"
	r.Phases = []drift.Phase{{Name: "init", Duration: 1500 * time.Millisecond}, {Name: "plan", Duration: 42 * time.Second}}
	if status == drift.StatusErrored {
		r.Error = "plan: exit status 1 at " + at.UTC().Format(time.TimeOnly)
		r.Findings = nil
	}
	return r
}

func start(t *testing.T, s store.Store, r store.Run) store.Run {
	t.Helper()
	require.NoError(t, s.StartRun(t.Context(), r))
	return r
}

func finish(t *testing.T, s store.Store, r store.Run) (before, after store.WorkspaceState) {
	t.Helper()
	before, after, err := s.FinishRun(t.Context(), r)
	require.NoError(t, err)
	return before, after
}

// run starts and finishes one run, returning the state after it.
func run(t *testing.T, s store.Store, id, workspace string, startMin, finishMin int, status drift.Status, fs ...drift.Finding) store.WorkspaceState {
	t.Helper()
	r := start(t, s, newRun(id, workspace, minutes(startMin)))
	_, after := finish(t, s, outcome(r, status, minutes(finishMin), fs...))
	return after
}

// equal compares with time.Equal for times (cmp uses Equal methods) and
// treats nil and empty slices alike.
func equal(t *testing.T, want, got any, msgAndArgs ...any) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		require.Fail(t, "mismatch (-want +got):\n"+diff, msgAndArgs...)
	}
}

func ids(runs []store.Run) []string {
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func names(states []store.WorkspaceState) []string {
	out := make([]string, 0, len(states))
	for _, st := range states {
		out = append(out, st.Workspace)
	}
	return out
}

func testStartedRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := newRun("r1", "net", t0)
	r.Trigger = "manual"
	r.Tool = "tofu 1.9.0"
	r.Status = drift.StatusDrift     // ignored: a started run is running
	r.FinishedAt = t0.Add(time.Hour) // ignored too
	r.Phases = []drift.Phase{{Name: "source", Duration: time.Second}}
	require.NoError(t, s.StartRun(ctx, r))

	want := r
	want.Status = store.RunRunning
	want.FinishedAt = time.Time{}
	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	equal(t, want, got)
	require.True(t, got.StartedAt.Equal(t0), "started_at %s, want %s", got.StartedAt, t0)
	require.True(t, got.FinishedAt.IsZero())

	runs, err := s.Runs(ctx, "net", 0)
	require.NoError(t, err)
	equal(t, []store.Run{want}, runs)

	// A workspace has state only once a run finishes.
	_, err = s.Workspace(ctx, "net")
	require.ErrorIs(t, err, store.ErrNotFound)
	states, err := s.Workspaces(ctx)
	require.NoError(t, err)
	require.Empty(t, states)
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	run(t, s, "r1", "net", 0, 1, drift.StatusClean)

	_, err := s.Run(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.Workspace(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, _, err = s.FinishRun(ctx, outcome(newRun("nope", "net", t0), drift.StatusClean, minutes(1)))
	require.ErrorIs(t, err, store.ErrNotFound)

	runs, err := s.Runs(ctx, "nope", 0)
	require.NoError(t, err)
	require.Empty(t, runs)
}

func testStartRefuses(t *testing.T, s store.Store) {
	ctx := t.Context()
	orig := start(t, s, newRun("r1", "net", t0))
	for _, tc := range []struct {
		name string
		r    store.Run
	}{
		{"no id", newRun("", "net", t0)},
		{"no workspace", newRun("r2", "", t0)},
		{"no start time", newRun("r2", "net", time.Time{})},
		{"duplicate id", newRun("r1", "other", minutes(5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.StartRun(ctx, tc.r))
		})
	}
	runs, err := s.Runs(ctx, "net", 0)
	require.NoError(t, err)
	equal(t, []store.Run{{ID: orig.ID, Workspace: "net", Trigger: "schedule", StartedAt: t0, Status: store.RunRunning}}, runs)
	runs, err = s.Runs(ctx, "other", 0)
	require.NoError(t, err)
	require.Empty(t, runs)
}

func testFinishRefuses(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := start(t, s, newRun("r1", "net", t0))
	good := outcome(r, drift.StatusDrift, minutes(1), fDrift)

	for _, tc := range []struct {
		name string
		r    store.Run
	}{
		{"running", outcome(r, store.RunRunning, minutes(1))},
		{"interrupted", outcome(r, store.RunInterrupted, minutes(1))},
		{"empty status", outcome(r, "", minutes(1))},
		{"unknown status", outcome(r, "weird", minutes(1))},
		{"no finish time", outcome(r, drift.StatusClean, time.Time{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.FinishRun(ctx, tc.r)
			require.Error(t, err)
		})
	}
	// Nothing was written by the refused calls.
	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, got.Status)
	_, err = s.Workspace(ctx, "net")
	require.ErrorIs(t, err, store.ErrNotFound)

	_, after := finish(t, s, good)
	again := outcome(r, drift.StatusErrored, minutes(2))
	_, _, err = s.FinishRun(ctx, again)
	require.Error(t, err, "a run finishes once")
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	equal(t, after, st, "a refused second finish changed the state")
	got, err = s.Run(ctx, "r1")
	require.NoError(t, err)
	equal(t, good, got)
}

func testFirstFinish(t *testing.T, s store.Store) {
	ctx := t.Context()
	r := start(t, s, newRun("r1", "net", t0))
	done := outcome(r, drift.StatusForbidden, minutes(3), fForbidden, fDrift, fNoise, fIgnored)
	before, after := finish(t, s, done)

	equal(t, store.WorkspaceState{Workspace: "net"}, before)
	want := store.WorkspaceState{
		Workspace:     "net",
		Status:        drift.StatusForbidden,
		Since:         minutes(3),
		LastRunID:     "r1",
		LastRunAt:     t0,
		LastSuccessAt: minutes(3),
		Fingerprint:   drift.Fingerprint("net", done.Findings),
		Findings:      done.Findings,
	}
	require.NotEmpty(t, want.Fingerprint)
	equal(t, want, after)

	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	equal(t, want, st)
	states, err := s.Workspaces(ctx)
	require.NoError(t, err)
	equal(t, []store.WorkspaceState{want}, states)

	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	equal(t, done, got)
	require.True(t, got.FinishedAt.Equal(minutes(3)))
	require.Equal(t, drift.Counts{Drift: 1, Forbidden: 1, Noise: 1}, got.Counts())
}

func testSince(t *testing.T, s store.Store) {
	steps := []struct {
		status    drift.Status
		findings  []drift.Finding
		sinceFrom int // index of the step whose finish Since must equal
	}{
		{drift.StatusClean, nil, 0},
		{drift.StatusClean, nil, 0},
		{drift.StatusDrift, []drift.Finding{fDrift}, 2},
		{drift.StatusDrift, []drift.Finding{fDrift, fPending}, 2}, // new fingerprint, same status
		{drift.StatusErrored, nil, 4},
		{drift.StatusErrored, nil, 4},
		{drift.StatusDrift, []drift.Finding{fDrift}, 6},
		{drift.StatusPending, []drift.Finding{fPending, fNoise}, 7},
	}
	var prev store.WorkspaceState
	for i, step := range steps {
		r := start(t, s, newRun(fmt.Sprintf("r%d", i), "net", minutes(10*i)))
		before, after := finish(t, s, outcome(r, step.status, minutes(10*i+5), step.findings...))
		if i == 0 {
			prev = store.WorkspaceState{Workspace: "net"}
		}
		equal(t, prev, before, "step %d: before is not the previous after", i)
		require.Equal(t, step.status, after.Status, "step %d", i)
		require.True(t, after.Since.Equal(minutes(10*step.sinceFrom+5)), "step %d: since %s, want the finish of step %d", i, after.Since, step.sinceFrom)
		require.True(t, after.LastRunAt.Equal(minutes(10*i)), "step %d: last_run_at", i)
		require.Equal(t, r.ID, after.LastRunID, "step %d", i)
		prev = after
	}
}

func testErroredKeepsFindings(t *testing.T, s store.Store) {
	ctx := t.Context()
	good := run(t, s, "r1", "net", 0, 1, drift.StatusDrift, fDrift, fNoise)

	r2 := start(t, s, newRun("r2", "net", minutes(10)))
	failed := outcome(r2, drift.StatusErrored, minutes(11))
	failed.Findings = []drift.Finding{fPending} // whatever an errored run carries, it says nothing about drift
	_, after := finish(t, s, failed)
	want := good
	want.Status = drift.StatusErrored
	want.Since = minutes(11)
	want.LastRunID = "r2"
	want.LastRunAt = minutes(10)
	want.Error = failed.Error
	want.ConsecutiveErrors = 1
	equal(t, want, after)
	require.Equal(t, good.Fingerprint, after.Fingerprint)
	require.True(t, after.LastSuccessAt.Equal(minutes(1)))

	got, err := s.Run(ctx, "r2")
	require.NoError(t, err)
	require.Equal(t, drift.StatusErrored, got.Status)
	require.Equal(t, failed.Error, got.Error, "the run keeps its own error")

	after = run(t, s, "r3", "net", 20, 21, drift.StatusErrored)
	want.LastRunID, want.LastRunAt = "r3", minutes(20)
	want.Error = after.Error
	want.ConsecutiveErrors = 2
	require.NotEqual(t, failed.Error, after.Error, "the state has the latest error")
	equal(t, want, after)

	after = run(t, s, "r4", "net", 30, 31, drift.StatusClean)
	equal(t, store.WorkspaceState{
		Workspace:     "net",
		Status:        drift.StatusClean,
		Since:         minutes(31),
		LastRunID:     "r4",
		LastRunAt:     minutes(30),
		LastSuccessAt: minutes(31),
	}, after)
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	equal(t, after, st)
}

func testFirstRunErrored(t *testing.T, s store.Store) {
	after := run(t, s, "r1", "net", 0, 2, drift.StatusErrored)
	require.NotEmpty(t, after.Error)
	equal(t, store.WorkspaceState{
		Workspace:         "net",
		Status:            drift.StatusErrored,
		Since:             minutes(2),
		LastRunID:         "r1",
		LastRunAt:         t0,
		Error:             after.Error,
		ConsecutiveErrors: 1,
	}, after)
	require.True(t, after.LastSuccessAt.IsZero())
}

func testRunsOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Started out of order; one still running.
	for _, n := range []int{3, 1, 5, 2} {
		run(t, s, fmt.Sprintf("a%d", n), "a", n, n+10, drift.StatusClean)
	}
	start(t, s, newRun("a4", "a", minutes(4)))
	run(t, s, "b1", "b", 1, 2, drift.StatusDrift, fDrift)
	run(t, s, "b2", "b", 6, 7, drift.StatusDrift, fDrift)

	for _, tc := range []struct {
		workspace string
		limit     int
		want      []string
	}{
		{"a", 0, []string{"a5", "a4", "a3", "a2", "a1"}},
		{"a", 2, []string{"a5", "a4"}},
		{"a", 5, []string{"a5", "a4", "a3", "a2", "a1"}},
		{"a", 50, []string{"a5", "a4", "a3", "a2", "a1"}},
		{"b", 0, []string{"b2", "b1"}},
		{"b", 1, []string{"b2"}},
		{"c", 0, nil},
	} {
		t.Run(fmt.Sprintf("%s limit %d", tc.workspace, tc.limit), func(t *testing.T) {
			runs, err := s.Runs(ctx, tc.workspace, tc.limit)
			require.NoError(t, err)
			equal(t, tc.want, ids(runs))
		})
	}
}

func testWorkspacesOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, ws := range []string{"zeta", "alpha", "mid", "Alpha-2"} {
		run(t, s, "r-"+ws, ws, i, i+1, drift.StatusClean)
	}
	start(t, s, newRun("r-unfinished", "never-finished", t0))
	states, err := s.Workspaces(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"Alpha-2", "alpha", "mid", "zeta"}, names(states))
	for _, st := range states {
		one, err := s.Workspace(ctx, st.Workspace)
		require.NoError(t, err)
		equal(t, one, st)
	}
}

func testMarkInterrupted(t *testing.T, s store.Store) {
	ctx := t.Context()
	run(t, s, "done", "a", 0, 1, drift.StatusDrift, fDrift)
	r1 := start(t, s, newRun("r1", "a", minutes(2)))
	r2 := start(t, s, newRun("r2", "b", minutes(1)))
	statesBefore, err := s.Workspaces(ctx)
	require.NoError(t, err)

	at := t0.Add(time.Hour)
	got, err := s.MarkInterrupted(ctx, at)
	require.NoError(t, err)
	require.Equal(t, []string{"r2", "r1"}, ids(got), "oldest first")
	for i, want := range []store.Run{r2, r1} {
		require.NotEmpty(t, got[i].Error)
		want.Status = store.RunInterrupted
		want.FinishedAt = at
		want.Error = got[i].Error
		equal(t, want, got[i])
		stored, err := s.Run(ctx, want.ID)
		require.NoError(t, err)
		equal(t, want, stored)
	}
	done, err := s.Run(ctx, "done")
	require.NoError(t, err)
	require.Equal(t, drift.StatusDrift, done.Status, "finished runs are left alone")

	statesAfter, err := s.Workspaces(ctx)
	require.NoError(t, err)
	equal(t, statesBefore, statesAfter, "workspace state changed")
	_, err = s.Workspace(ctx, "b")
	require.ErrorIs(t, err, store.ErrNotFound)

	again, err := s.MarkInterrupted(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, again, "a run is interrupted once")

	_, _, err = s.FinishRun(ctx, outcome(r1, drift.StatusClean, at))
	require.Error(t, err, "an interrupted run cannot be finished")
}

// testMarkInterruptedKeep: runs named in keep (an adopted Job's) stay
// running, are not returned and finish later like any running run; unknown
// and finished ids in keep change nothing.
func testMarkInterruptedKeep(t *testing.T, s store.Store) {
	ctx := t.Context()
	run(t, s, "done", "a", 0, 1, drift.StatusDrift, fDrift)
	kept := start(t, s, newRun("kept", "a", minutes(2)))
	start(t, s, newRun("lost", "b", minutes(3)))

	at := t0.Add(time.Hour)
	got, err := s.MarkInterrupted(ctx, at, "kept", "done", "unknown")
	require.NoError(t, err)
	require.Equal(t, []string{"lost"}, ids(got))
	require.Equal(t, store.RunInterrupted, got[0].Status)
	stored, err := s.Run(ctx, "kept")
	require.NoError(t, err)
	want := kept
	want.Status = store.RunRunning
	equal(t, want, stored, "a kept run is left running")
	done, err := s.Run(ctx, "done")
	require.NoError(t, err)
	require.Equal(t, drift.StatusDrift, done.Status, "a finished run in keep is left alone")

	_, after := finish(t, s, outcome(kept, drift.StatusClean, at.Add(time.Minute)))
	require.Equal(t, "kept", after.LastRunID, "a kept run finishes as usual")

	again, err := s.MarkInterrupted(ctx, at.Add(2*time.Minute))
	require.NoError(t, err)
	require.Empty(t, again, "nothing left to interrupt")
}

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
	// c1 is interrupted: finished, prunable.
	start(t, s, newRun("c1", "c", t0))
	_, err := s.MarkInterrupted(ctx, minutes(1))
	require.NoError(t, err)

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
