package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// RemediationStore is what RemediationConformance tests: a store.Store and
// a store.AlertStore (runs, incidents and the outbox a remediation touches)
// that is also a store.RemediationStore.
type RemediationStore interface {
	store.Store
	store.AlertStore
	store.RemediationStore
}

// RemediationConformance runs the store.RemediationStore contract against
// stores from open, one fresh directory and store per subtest, restarting
// the store where a case needs it.
//
// Beyond the interface's comments, the suite pins these choices:
//   - Every field of a remediation round-trips; ChangeSet, Refusals and
//     Outcome as equivalent JSON.
//   - A transition sets Reason to to.Reason, even empty; a transition to
//     running or to a final state keeps the decision (DecidedAt and
//     DecidedBy); ExpireRemediations and InterruptRemediations keep every
//     other field.
//   - ExpireRemediations and InterruptRemediations return the
//     remediations as stored, in the order they were created.
//   - Of transitions racing from the same state, exactly one succeeds and
//     the others are ErrConflict.
//   - FinishRunOnly stores the outcome as FinishRun does (status, error,
//     tool, findings, phases, finish time), whatever the status.
//   - A remediation's alert gets only its workspace's incidents, and its
//     messages queue behind the incident's earlier ones.
func RemediationConformance(t *testing.T, open Opener[RemediationStore]) {
	t.Helper()
	runReopenable(t, open, []reopenTest[RemediationStore]{
		{"created remediations read back", testRemediationCreated},
		{"create refuses incomplete and duplicate remediations", testRemediationCreateRefuses},
		{"unknown remediations are not found", testRemediationNotFound},
		{"remediations are listed newest first", testRemediationsOrder},
		{"transitions compare and set", testRemediationTransitions},
		{"remediation by apply run", testRemediationByApplyRun},
		{"expire remediations", testExpireRemediations},
		{"interrupt remediations after a restart", testInterruptRemediations},
		{"the pause flag survives a restart", testRemediationPaused},
		{"finish run only", testFinishRunOnly},
		{"create with alert", testCreateRemediationWithAlert},
		{"transition with alert", testTransitionRemediationWithAlert},
		{"racing transitions", testRemediationRace},
	})
}

var (
	changeSet = json.RawMessage(`{"entries":[{"address":"local_file.motd","action":"update","attributes":["content"]}]}`)
	refusals  = json.RawMessage(`[{"code":"forbidden","reason":"kubernetes_deployment.app is managed by GitOps"}]`)
)

// proposal is a remediation as the daemon proposes it in approve mode.
func proposal(id, workspace string, created time.Time) store.Remediation {
	return store.Remediation{
		ID: id, Workspace: workspace, DetectRunID: "detect-" + id, Commit: "0123abc", Mode: "approve",
		ChangeSet: changeSet, ChangeSetHash: "sha256:" + id, State: store.RemediationPending,
		CreatedAt: created, ExpiresAt: created.Add(time.Hour),
	}
}

func create(t *testing.T, s RemediationStore, r store.Remediation) store.Remediation {
	t.Helper()
	require.NoError(t, s.CreateRemediation(t.Context(), r))
	return r
}

func getRemediation(t *testing.T, s RemediationStore, id string) store.Remediation {
	t.Helper()
	r, err := s.Remediation(t.Context(), id)
	require.NoError(t, err, "remediation %s", id)
	return r
}

func remediationIDs(rs []store.Remediation) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func incidentKeys(ins []store.Incident) []string {
	out := make([]string, 0, len(ins))
	for _, in := range ins {
		out = append(out, in.Key)
	}
	return out
}

// equalRemediation compares JSON fields as JSON and the rest with equal. A
// want without Refusals expects an empty list, and without Outcome none;
// a want without ChangeSet does not look at it.
func equalRemediation(t *testing.T, want, got store.Remediation, msgAndArgs ...any) {
	t.Helper()
	if len(want.ChangeSet) > 0 {
		require.JSONEq(t, string(want.ChangeSet), string(got.ChangeSet), msgAndArgs...)
	}
	wantRefusals := string(want.Refusals)
	if wantRefusals == "" {
		wantRefusals = "[]"
	}
	require.JSONEq(t, wantRefusals, string(got.Refusals), msgAndArgs...)
	if len(want.Outcome) == 0 {
		require.Empty(t, got.Outcome, msgAndArgs...)
	} else {
		require.JSONEq(t, string(want.Outcome), string(got.Outcome), msgAndArgs...)
	}
	want.ChangeSet, want.Refusals, want.Outcome = nil, nil, nil
	got.ChangeSet, got.Refusals, got.Outcome = nil, nil, nil
	equal(t, want, got, msgAndArgs...)
}

func testRemediationCreated(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	pending := create(t, s, proposal("a", "net", t0))
	auto := proposal("b", "net", minutes(1))
	auto.Mode, auto.State, auto.ExpiresAt, auto.DecidedAt, auto.DecidedBy = "auto", store.RemediationApproved, time.Time{}, minutes(1), "auto"
	create(t, s, auto)
	refused := proposal("c", "dns", minutes(2))
	refused.State, refused.Reason, refused.Refusals, refused.ExpiresAt = store.RemediationRefused, "forbidden: kubernetes_deployment.app", refusals, time.Time{}
	refused.FinishedAt = minutes(2)
	refused.Outcome = json.RawMessage(`{"result":"refused"}`)
	create(t, s, refused)
	running := proposal("d", "db", minutes(3))
	running.State, running.ApplyRunID, running.DecidedAt, running.DecidedBy = store.RemediationRunning, "apply-d", minutes(4), "api"
	create(t, s, running)
	minimal := create(t, s, store.Remediation{ID: "e", Workspace: "net", CreatedAt: minutes(5)})

	for _, want := range []store.Remediation{pending, auto, refused, running} {
		got := getRemediation(t, s, want.ID)
		equalRemediation(t, want, got, want.ID)
	}
	got := getRemediation(t, s, "e")
	require.Equal(t, store.RemediationPending, got.State, "an empty state is pending")
	minimal.State = store.RemediationPending
	equalRemediation(t, minimal, got)
	require.True(t, getRemediation(t, s, "a").CreatedAt.Equal(t0), "times round-trip as instants")
}

func testRemediationCreateRefuses(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	a := create(t, s, proposal("a", "net", t0))
	noID, noWorkspace, noTime, dup := proposal("", "net", t0), proposal("b", "", t0), proposal("b", "net", t0), proposal("a", "dns", minutes(1))
	noTime.CreatedAt = time.Time{}
	dup.ChangeSetHash = "other"
	for _, tc := range []struct {
		name string
		r    store.Remediation
	}{
		{"no id", noID},
		{"no workspace", noWorkspace},
		{"no created at", noTime},
		{"duplicate id", dup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.CreateRemediation(ctx, tc.r))
			require.Error(t, s.CreateRemediationWithAlert(ctx, tc.r, nil))
		})
	}
	equalRemediation(t, a, getRemediation(t, s, "a"), "a duplicate overwrote it")
	all, err := s.Remediations(ctx, "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, remediationIDs(all))
}

func testRemediationNotFound(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	a := create(t, s, proposal("a", "net", t0))
	_, err := s.Remediation(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	for _, runID := range []string{"nope", "", a.DetectRunID} { // unknown, no apply run, a detection run
		_, err = s.RemediationByApplyRun(ctx, runID)
		require.ErrorIs(t, err, store.ErrNotFound, "apply run %q", runID)
	}
	to := store.Transition{State: store.RemediationApproved, At: minutes(1), By: "api"}
	_, err = s.TransitionRemediation(ctx, "nope", []store.RemediationState{store.RemediationPending}, to)
	require.ErrorIs(t, err, store.ErrNotFound)
	called := false
	_, err = s.TransitionRemediationWithAlert(ctx, "nope", []store.RemediationState{store.RemediationPending}, to,
		func(store.Remediation, []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			called = true
			return nil, nil
		})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.False(t, called, "the alert of an unknown remediation was called")
	list, err := s.Remediations(ctx, "nope", 0)
	require.NoError(t, err)
	require.Empty(t, list)
}

func testRemediationsOrder(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	// Created in this order; CreatedAt says otherwise.
	create(t, s, proposal("a", "net", minutes(5)))
	create(t, s, proposal("b", "net", minutes(1)))
	create(t, s, proposal("c", "dns", minutes(3)))
	create(t, s, proposal("d", "net", minutes(2)))
	for _, tc := range []struct {
		workspace string
		limit     int
		want      []string
	}{
		{"net", 0, []string{"d", "b", "a"}},
		{"net", 2, []string{"d", "b"}},
		{"net", 10, []string{"d", "b", "a"}},
		{"dns", 0, []string{"c"}},
		{"", 0, []string{"d", "c", "b", "a"}},
		{"", 1, []string{"d"}},
		{"other", 0, []string{}},
	} {
		t.Run(fmt.Sprintf("%q limit %d", tc.workspace, tc.limit), func(t *testing.T) {
			rs, err := s.Remediations(ctx, tc.workspace, tc.limit)
			require.NoError(t, err)
			require.Equal(t, tc.want, remediationIDs(rs))
		})
	}
}

func testRemediationTransitions(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	pendingOnly := []store.RemediationState{store.RemediationPending}
	want := create(t, s, proposal("a", "net", t0))
	transition := func(from []store.RemediationState, to store.Transition) store.Remediation {
		t.Helper()
		got, err := s.TransitionRemediation(ctx, "a", from, to)
		require.NoError(t, err)
		equalRemediation(t, got, getRemediation(t, s, "a"), "the returned remediation is the stored one")
		return got
	}
	refused := func(from []store.RemediationState, to store.Transition, conflict bool) {
		t.Helper()
		_, err := s.TransitionRemediation(ctx, "a", from, to)
		if conflict {
			require.ErrorIs(t, err, store.ErrConflict)
		} else {
			require.Error(t, err)
		}
		equalRemediation(t, want, getRemediation(t, s, "a"), "a refused transition changed it")
	}

	refused([]store.RemediationState{store.RemediationApproved, store.RemediationRunning},
		store.Transition{State: store.RemediationRunning, At: minutes(1)}, true)
	refused(nil, store.Transition{State: store.RemediationApproved, At: minutes(1)}, true)
	refused(pendingOnly, store.Transition{State: store.RemediationApproved, By: "api"}, false) // no time

	// Approved: decided, not finished.
	got := transition([]store.RemediationState{store.RemediationPending, store.RemediationApproved},
		store.Transition{State: store.RemediationApproved, At: minutes(1), By: "api", Reason: "approved by api"})
	want.State, want.DecidedAt, want.DecidedBy, want.Reason = store.RemediationApproved, minutes(1), "api", "approved by api"
	equalRemediation(t, want, got)
	refused(pendingOnly, store.Transition{State: store.RemediationRejected, At: minutes(2), By: "api"}, true)

	// Running: the apply run is recorded, the decision kept.
	got = transition([]store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: minutes(2), ApplyRunID: "apply1"})
	want.State, want.ApplyRunID, want.Reason = store.RemediationRunning, "apply1", ""
	equalRemediation(t, want, got)

	// Applied: finished, with the outcome; the decision and the apply run kept.
	out := json.RawMessage(`{"result":"applied","applied":["local_file.motd"]}`)
	got = transition([]store.RemediationState{store.RemediationRunning},
		store.Transition{State: store.RemediationApplied, At: minutes(3), Reason: "applied 1 change", Outcome: out})
	want.State, want.FinishedAt, want.Reason, want.Outcome = store.RemediationApplied, minutes(3), "applied 1 change", out
	equalRemediation(t, want, got)
	refused([]store.RemediationState{store.RemediationRunning}, store.Transition{State: store.RemediationFailed, At: minutes(4)}, true)

	// Rejected and expired are decisions and final.
	b := create(t, s, proposal("b", "net", minutes(10)))
	got, err := s.TransitionRemediation(ctx, "b", pendingOnly, store.Transition{State: store.RemediationRejected, At: minutes(11), By: "api", Reason: "rejected by api"})
	require.NoError(t, err)
	b.State, b.DecidedAt, b.DecidedBy, b.FinishedAt, b.Reason = store.RemediationRejected, minutes(11), "api", minutes(11), "rejected by api"
	equalRemediation(t, b, got)
	equalRemediation(t, b, getRemediation(t, s, "b"))
	c := create(t, s, proposal("c", "net", minutes(12)))
	got, err = s.TransitionRemediation(ctx, "c", pendingOnly, store.Transition{State: store.RemediationExpired, At: minutes(13), By: "superseded", Reason: "superseded by remediation d"})
	require.NoError(t, err)
	c.State, c.DecidedAt, c.DecidedBy, c.FinishedAt, c.Reason = store.RemediationExpired, minutes(13), "superseded", minutes(13), "superseded by remediation d"
	equalRemediation(t, c, got)
	equalRemediation(t, c, getRemediation(t, s, "c"))

	// Failed, then approved again (a restart's failure found to have
	// applied nothing): live again, so no longer finished.
	d := proposal("d", "db", minutes(20))
	d.State, d.DecidedAt, d.DecidedBy, d.ApplyRunID = store.RemediationRunning, minutes(21), "auto", "apply-d"
	create(t, s, d)
	got, err = s.TransitionRemediation(ctx, "d", []store.RemediationState{store.RemediationRunning},
		store.Transition{State: store.RemediationFailed, At: minutes(22), Reason: "apply: exit status 1"})
	require.NoError(t, err)
	d.State, d.FinishedAt, d.Reason = store.RemediationFailed, minutes(22), "apply: exit status 1"
	equalRemediation(t, d, got)
	got, err = s.TransitionRemediation(ctx, "d", []store.RemediationState{store.RemediationFailed},
		store.Transition{State: store.RemediationApproved, At: minutes(23), By: "api", Reason: "nothing was applied"})
	require.NoError(t, err)
	d.State, d.FinishedAt, d.DecidedAt, d.DecidedBy, d.Reason = store.RemediationApproved, time.Time{}, minutes(23), "api", "nothing was applied"
	equalRemediation(t, d, got)
	require.True(t, got.FinishedAt.IsZero())
	equalRemediation(t, d, getRemediation(t, s, "d"))
}

func testRemediationByApplyRun(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	create(t, s, proposal("a", "net", t0))
	b := proposal("b", "net", minutes(1))
	b.State, b.ApplyRunID, b.DecidedAt, b.DecidedBy = store.RemediationRunning, "apply-b", minutes(1), "auto"
	create(t, s, b)
	_, err := s.RemediationByApplyRun(ctx, "apply-a")
	require.ErrorIs(t, err, store.ErrNotFound, "not applied yet")

	_, err = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationPending},
		store.Transition{State: store.RemediationApproved, At: minutes(2), By: "api"})
	require.NoError(t, err)
	_, err = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: minutes(3), ApplyRunID: "apply-a"})
	require.NoError(t, err)
	for id, runID := range map[string]string{"a": "apply-a", "b": "apply-b"} {
		got, err := s.RemediationByApplyRun(ctx, runID)
		require.NoError(t, err, runID)
		equalRemediation(t, getRemediation(t, s, id), got)
	}
	// Still found once finished.
	_, err = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationRunning},
		store.Transition{State: store.RemediationApplied, At: minutes(4), Outcome: json.RawMessage(`{"result":"applied"}`)})
	require.NoError(t, err)
	got, err := s.RemediationByApplyRun(ctx, "apply-a")
	require.NoError(t, err)
	require.Equal(t, "a", got.ID)
	require.Equal(t, store.RemediationApplied, got.State)
	for _, runID := range []string{"detect-a", "detect-b", "", "apply-c"} {
		_, err = s.RemediationByApplyRun(ctx, runID)
		require.ErrorIs(t, err, store.ErrNotFound, "apply run %q", runID)
	}
}
