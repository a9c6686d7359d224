package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

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

// testFindingsMemory: what a finding learnt (its window, attribution or
// its failure, a pending change's commit) reads back from the run and
// the workspace's state.
func testFindingsMemory(t *testing.T, s store.Store) {
	ctx := t.Context()
	d := fDrift
	d.Window = &drift.Window{From: t0, To: minutes(5)}
	d.Attribution = &drift.Attribution{Actor: "alice@example.com", Time: minutes(2), Source: "cloudtrail", EventID: "ev-1", URL: "https://audit.example.com/ev-1"}
	failed := fIgnored
	failed.Window = &drift.Window{To: minutes(5)}
	failed.AttributionError = "attribution failed: who-changed: timed out"
	p := fPending
	p.Commit = &drift.Commit{Hash: "0123456789abcdef0123456789abcdef01234567", Author: "Bob", Time: minutes(1), Subject: "add the role"}
	r := start(t, s, newRun("r1", "net", t0))
	done := outcome(r, drift.StatusDrift, minutes(5), d, failed, p)
	_, after := finish(t, s, done)
	equal(t, done.Findings, after.Findings)
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	equal(t, done.Findings, st.Findings)
	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	equal(t, done.Findings, got.Findings)
}

// testProviders: a successful run's provider versions are the state's,
// a clean run's are its CleanProviders too; an errored run, or one that
// did not read them (nil), changes neither; they read back after the
// run, from Workspace and Workspaces.
func testProviders(t *testing.T, s store.Store) {
	ctx := t.Context()
	const aws = "registry.terraform.io/hashicorp/aws"
	step := func(id string, at int, status drift.Status, providers map[string]string, fs ...drift.Finding) store.WorkspaceState {
		t.Helper()
		r := start(t, s, newRun(id, "net", minutes(at)))
		done := outcome(r, status, minutes(at+1), fs...)
		done.Providers = providers
		_, after := finish(t, s, done)
		st, err := s.Workspace(ctx, "net")
		require.NoError(t, err)
		equal(t, after, st, "read back")
		return after
	}
	v580, v581 := map[string]string{aws: "5.80.0"}, map[string]string{aws: "5.81.0"}

	after := step("r1", 0, drift.StatusClean, v580)
	require.Equal(t, v580, after.Providers)
	require.Equal(t, v580, after.CleanProviders)

	after = step("r2", 10, drift.StatusDrift, v581, fDrift)
	require.Equal(t, v581, after.Providers)
	require.Equal(t, v580, after.CleanProviders, "the last clean run's")

	after = step("r3", 20, drift.StatusErrored, map[string]string{aws: "9.9.9"})
	require.Equal(t, v581, after.Providers, "an errored run says nothing")
	require.Equal(t, v580, after.CleanProviders)

	after = step("r4", 30, drift.StatusDrift, nil, fDrift)
	require.Equal(t, v581, after.Providers, "a run that did not read them")

	after = step("r5", 40, drift.StatusClean, v581)
	require.Equal(t, v581, after.CleanProviders)
	states, err := s.Workspaces(ctx)
	require.NoError(t, err)
	require.Equal(t, v581, states[0].CleanProviders)
}

// testManaged: a successful run's managed instances (with identities)
// are the state's; an errored run, or one that did not read them (nil),
// keeps the last known; they read back from Workspace and Workspaces.
func testManaged(t *testing.T, s store.Store) {
	ctx := t.Context()
	step := func(id string, at int, status drift.Status, managed []drift.Managed) store.WorkspaceState {
		t.Helper()
		r := start(t, s, newRun(id, "net", minutes(at)))
		done := outcome(r, status, minutes(at+1))
		done.Managed = managed
		_, after := finish(t, s, done)
		st, err := s.Workspace(ctx, "net")
		require.NoError(t, err)
		equal(t, after, st, "read back")
		all, err := s.Workspaces(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		equal(t, after, all[0], "listed")
		return after
	}
	one := []drift.Managed{{Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", ID: "logs",
		Identity: map[string]string{"bucket": "logs", "region": "eu-west-1"}}}
	two := append(slices.Clone(one), drift.Managed{Address: "aws_s3_bucket.old", Type: "aws_s3_bucket", ID: "old"})

	require.Nil(t, step("r0", -10, drift.StatusErrored, nil).Managed, "never known")
	require.Equal(t, one, step("r1", 0, drift.StatusClean, one).Managed)
	require.Equal(t, two, step("r2", 10, drift.StatusClean, two).Managed)
	require.Equal(t, two, step("r3", 20, drift.StatusErrored, nil).Managed, "an errored run says nothing")
	require.Equal(t, two, step("r4", 30, drift.StatusClean, nil).Managed, "a run that did not read them")
	empty := step("r5", 40, drift.StatusClean, []drift.Managed{}).Managed
	require.NotNil(t, empty, "an empty state is known")
	require.Empty(t, empty)
}
