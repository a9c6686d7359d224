package storetest

import (
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
// RecoverRuns errored) is an error, Since is the FinishedAt of the run that
// changed the status, Runs of an unknown workspace is empty (not an error),
// RecoverRuns keeps every field of a run it errors but Status, FinishedAt
// and Error, and refuses a zero time, and Prune's keep 0 means no count
// limit.
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
		{"findings keep their window, attribution and commit", testFindingsMemory},
		{"a run's provider versions and the last clean run's", testProviders},
		{"a run's managed instances and their identities", testManaged},
		{"first run errored", testFirstRunErrored},
		{"runs are listed newest first", testRunsOrder},
		{"workspaces are listed by name", testWorkspacesOrder},
		{"recover runs errors the running runs", testRecoverRuns},
		{"recover runs keeps the runs it is told to", testRecoverRunsKeep},
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
