package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
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

func testExpireRemediations(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	p1 := proposal("p1", "net", t0)
	p1.ExpiresAt = minutes(10)
	p0 := proposal("p0", "dns", minutes(1))
	p0.ExpiresAt = minutes(5)
	p2 := proposal("p2", "net", minutes(2))
	p2.ExpiresAt = minutes(20)
	never := proposal("never", "net", minutes(3))
	never.ExpiresAt = time.Time{}
	approved := proposal("approved", "db", minutes(4))
	approved.State, approved.DecidedAt, approved.DecidedBy = store.RemediationApproved, minutes(4), "api"
	approved.ExpiresAt = minutes(5)
	for _, r := range []store.Remediation{p1, p0, p2, never, approved} {
		create(t, s, r)
	}

	expire := func(now time.Time, want ...store.Remediation) {
		t.Helper()
		got, err := s.ExpireRemediations(ctx, now)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i, w := range want {
			require.NotEmpty(t, got[i].Reason, w.ID)
			w.State, w.DecidedAt, w.DecidedBy, w.FinishedAt, w.Reason = store.RemediationExpired, now, "expiry", now, got[i].Reason
			equalRemediation(t, w, got[i], w.ID)
			equalRemediation(t, w, getRemediation(t, s, w.ID), w.ID)
		}
	}
	expire(minutes(4))
	expire(minutes(10), p1, p0) // at ExpiresAt is expired; in the order they were created
	expire(minutes(10))
	expire(minutes(10_000), p2)
	equalRemediation(t, never, getRemediation(t, s, "never"), "no ExpiresAt: never expires")
	equalRemediation(t, approved, getRemediation(t, s, "approved"), "only pending remediations expire")
}

func testInterruptRemediations(t *testing.T, s RemediationStore, reopen func() RemediationStore) {
	ctx := t.Context()
	r1 := proposal("r1", "net", t0)
	r1.State, r1.DecidedAt, r1.DecidedBy, r1.ApplyRunID = store.RemediationRunning, minutes(1), "api", "apply-r1"
	r2 := proposal("r2", "dns", minutes(2))
	r2.Mode, r2.State, r2.DecidedAt, r2.DecidedBy, r2.ApplyRunID = "auto", store.RemediationRunning, minutes(2), "auto", "apply-r2"
	pending := proposal("pending", "net", minutes(3))
	approved := proposal("approved", "db", minutes(4))
	approved.State, approved.DecidedAt, approved.DecidedBy = store.RemediationApproved, minutes(4), "api"
	applied := proposal("applied", "db", minutes(5))
	applied.State, applied.DecidedAt, applied.DecidedBy, applied.FinishedAt = store.RemediationApplied, minutes(5), "auto", minutes(6)
	applied.ApplyRunID, applied.Outcome = "apply-applied", json.RawMessage(`{"result":"applied"}`)
	for _, r := range []store.Remediation{r1, r2, pending, approved, applied} {
		create(t, s, r)
	}

	// The process died during the applies: the next start finds them.
	s = reopen()
	at := minutes(30)
	got, err := s.InterruptRemediations(ctx, at)
	require.NoError(t, err)
	require.Equal(t, []string{"r1", "r2"}, remediationIDs(got))
	for i, want := range []store.Remediation{r1, r2} {
		require.NotEmpty(t, got[i].Reason, want.ID)
		want.State, want.FinishedAt, want.Reason = store.RemediationFailed, at, got[i].Reason
		equalRemediation(t, want, got[i], "%s: the decision and the apply run are kept", want.ID)
		equalRemediation(t, want, getRemediation(t, s, want.ID))
	}
	for _, r := range []store.Remediation{pending, approved, applied} {
		equalRemediation(t, r, getRemediation(t, s, r.ID), "%s is not running", r.ID)
	}
	again, err := s.InterruptRemediations(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, again)

	s = reopen()
	for _, r := range got {
		equalRemediation(t, r, getRemediation(t, s, r.ID), "%s: the failure is durable", r.ID)
	}
}

func testRemediationPaused(t *testing.T, s RemediationStore, reopen func() RemediationStore) {
	ctx := t.Context()
	paused := func(want bool) {
		t.Helper()
		got, err := s.RemediationPaused(ctx)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	paused(false)
	s = reopen()
	paused(false)
	require.NoError(t, s.SetRemediationPaused(ctx, true))
	paused(true)
	s = reopen()
	paused(true)
	require.NoError(t, s.SetRemediationPaused(ctx, true))
	paused(true)
	require.NoError(t, s.SetRemediationPaused(ctx, false))
	paused(false)
	s = reopen()
	paused(false)
}

func testFinishRunOnly(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	// The workspace has state and an open incident from a detection.
	inc := incident("dw-drift-net", "net", "drift", minutes(1))
	_, st := runWith(t, s, "detect", "net", 0, 1, fixed([]store.Incident{inc}))
	incidents := func() []store.Incident {
		t.Helper()
		ins, err := s.Incidents(ctx, "net")
		require.NoError(t, err)
		return ins
	}
	incBefore := incidents()

	apply := start(t, s, store.Run{ID: "apply", Workspace: "net", Trigger: "remediate", StartedAt: minutes(2)})
	applied := outcome(apply, "applied", minutes(3), fDrift)
	require.NoError(t, s.FinishRunOnly(ctx, applied))
	equal(t, applied, getRun(t, s, "apply"))

	det := start(t, s, newRun("cancelled", "net", minutes(4)))
	c := outcome(det, store.RunCancelled, minutes(5))
	c.Error = "cancelled by request"
	require.NoError(t, s.FinishRunOnly(ctx, c))
	equal(t, c, getRun(t, s, "cancelled"))

	failed := start(t, s, newRun("failed", "dns", minutes(6)))
	f := outcome(failed, drift.StatusErrored, minutes(7))
	require.NoError(t, s.FinishRunOnly(ctx, f), "even an errored status")
	equal(t, f, getRun(t, s, "failed"))

	equal(t, []store.WorkspaceState{st}, states(t, s), "workspace state changed")
	equal(t, incBefore, incidents(), "incidents changed")

	// Refused: a run that is not running, or an outcome without a status
	// or a finish time.
	require.Error(t, s.FinishRunOnly(ctx, outcome(apply, "failed", minutes(8))), "a run finishes once")
	equal(t, applied, getRun(t, s, "apply"))
	require.Error(t, s.FinishRunOnly(ctx, outcome(newRun("nope", "net", t0), "applied", minutes(8))))
	_, err := s.Run(ctx, "nope")
	require.ErrorIs(t, err, store.ErrNotFound, "a refused finish created a run")
	live := start(t, s, newRun("live", "net", minutes(9)))
	require.Error(t, s.FinishRunOnly(ctx, outcome(live, "", minutes(10))))
	require.Error(t, s.FinishRunOnly(ctx, outcome(live, "applied", time.Time{})))
	equal(t, running(live), getRun(t, s, "live"))
	_, err = s.MarkInterrupted(ctx, minutes(11))
	require.NoError(t, err)
	require.Error(t, s.FinishRunOnly(ctx, outcome(live, "applied", minutes(12))), "an interrupted run")
	require.Equal(t, store.RunInterrupted, getRun(t, s, "live").Status)
}

// alertRecorder builds RemediationAlerts that record what they were called
// with.
type alertRecorder struct {
	seen      []store.Remediation
	incidents [][]store.Incident
}

func (a *alertRecorder) alert(changed []store.Incident, msgs ...store.OutboxMessage) store.RemediationAlert {
	return func(r store.Remediation, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		a.seen = append(a.seen, r)
		a.incidents = append(a.incidents, incidents)
		return changed, msgs
	}
}

func panicking(store.Remediation, []store.Incident) ([]store.Incident, []store.OutboxMessage) {
	panic("boom")
}

// remediationMsg is a message as the daemon announces a remediation: its
// CreatedAt and NextAttempt are left to the store.
func remediationMsg(id, incidentKey string) store.OutboxMessage {
	m := msg(id, "slack", incidentKey, time.Time{})
	m.NextAttempt = time.Time{}
	return m
}

func testCreateRemediationWithAlert(t *testing.T, s RemediationStore, reopen func() RemediationStore) {
	ctx := t.Context()
	inc := incident("dw-drift-net", "net", "drift", minutes(1))
	other := incident("dw-drift-dns", "dns", "drift", minutes(1))
	runWith(t, s, "detect", "net", 0, 1, fixed([]store.Incident{inc}, msg("open/slack", "slack", inc.Key, minutes(1))))
	runWith(t, s, "detect-dns", "dns", 0, 1, fixed([]store.Incident{other}))
	var rec alertRecorder

	rem := proposal("rem1", "net", minutes(2))
	rem.State = ""
	raised := inc
	raised.Severity = "critical"
	require.NoError(t, s.CreateRemediationWithAlert(ctx, rem, rec.alert([]store.Incident{raised}, remediationMsg("proposed/slack", inc.Key))))
	require.Len(t, rec.seen, 1)
	require.Equal(t, "rem1", rec.seen[0].ID)
	require.Equal(t, store.RemediationPending, rec.seen[0].State, "the alert sees the remediation as written")
	require.Equal(t, []string{inc.Key}, incidentKeys(rec.incidents[0]), "only its workspace's incidents")
	require.Equal(t, store.RemediationPending, getRemediation(t, s, "rem1").State)
	// Behind the incident's earlier message, created at the remediation's
	// time.
	require.Equal(t, []string{"open/slack"}, due(t, s, minutes(60), 0))
	deliver(t, s, minutes(3), "open/slack")
	msgs, err := s.DueMessages(ctx, minutes(60), 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "proposed/slack", msgs[0].ID)
	require.True(t, msgs[0].CreatedAt.Equal(rem.CreatedAt), "created at %s, want the remediation's %s", msgs[0].CreatedAt, rem.CreatedAt)

	// A nil alert is CreateRemediation.
	require.NoError(t, s.CreateRemediationWithAlert(ctx, proposal("rem2", "net", minutes(4)), nil))
	getRemediation(t, s, "rem2")

	netBefore, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	require.Equal(t, "critical", netBefore[0].Severity, "the alert's incident change is stored")
	dnsBefore, err := s.Incidents(ctx, "dns")
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		alert store.RemediationAlert
	}{
		{"panics", panicking},
		{"message already in the outbox", rec.alert(nil, remediationMsg("proposed/slack", inc.Key))},
		{"message for an unknown incident", rec.alert(nil, remediationMsg("x/slack", "nope"))},
		{"message for another workspace's incident", rec.alert(nil, remediationMsg("x/slack", other.Key))},
		{"another workspace's incident", rec.alert([]store.Incident{other})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.CreateRemediationWithAlert(ctx, proposal("bad", "net", minutes(5)), tc.alert))
			_, err := s.Remediation(ctx, "bad")
			require.ErrorIs(t, err, store.ErrNotFound, "a failed announcement created the remediation")
			ins, err := s.Incidents(ctx, "net")
			require.NoError(t, err)
			equal(t, netBefore, ins)
			ins, err = s.Incidents(ctx, "dns")
			require.NoError(t, err)
			equal(t, dnsBefore, ins)
			require.Equal(t, []string{"proposed/slack"}, due(t, s, minutes(60), 0))
		})
	}

	s = reopen()
	require.Equal(t, store.RemediationPending, getRemediation(t, s, "rem1").State)
	require.Equal(t, []string{"proposed/slack"}, due(t, s, minutes(60), 0))
	ins, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	equal(t, netBefore, ins)
}

func testTransitionRemediationWithAlert(t *testing.T, s RemediationStore, reopen func() RemediationStore) {
	ctx := t.Context()
	inc := incident("dw-drift-net", "net", "drift", minutes(1))
	runWith(t, s, "detect", "net", 0, 1, fixed([]store.Incident{inc}, msg("open/slack", "slack", inc.Key, minutes(1))))
	deliver(t, s, minutes(2), "open/slack")
	pending := create(t, s, proposal("rem1", "net", minutes(2)))
	netBefore, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	var rec alertRecorder

	pendingOnly := []store.RemediationState{store.RemediationPending}
	approve := store.Transition{State: store.RemediationApproved, At: minutes(3), By: "api"}
	raised := inc
	raised.Severity = "critical"
	for _, tc := range []struct {
		name  string
		alert store.RemediationAlert
	}{
		{"panics", panicking},
		{"message already in the outbox", rec.alert([]store.Incident{raised}, remediationMsg("open/slack", inc.Key))},
		{"message for an unknown incident", rec.alert(nil, remediationMsg("x/slack", "nope"))},
		{"another workspace's incident", rec.alert([]store.Incident{incident("dw-drift-dns", "dns", "drift", minutes(1))})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.TransitionRemediationWithAlert(ctx, "rem1", pendingOnly, approve, tc.alert)
			require.Error(t, err)
			equalRemediation(t, pending, getRemediation(t, s, "rem1"), "the transition is rolled back")
			ins, err := s.Incidents(ctx, "net")
			require.NoError(t, err)
			equal(t, netBefore, ins)
			require.Empty(t, due(t, s, minutes(60), 0))
		})
	}

	// Refused by its state: the alert is not called.
	n := len(rec.seen)
	_, err = s.TransitionRemediationWithAlert(ctx, "rem1", []store.RemediationState{store.RemediationRunning}, approve,
		rec.alert(nil, remediationMsg("never/slack", inc.Key)))
	require.ErrorIs(t, err, store.ErrConflict)
	require.Len(t, rec.seen, n)
	equalRemediation(t, pending, getRemediation(t, s, "rem1"))

	// Approved with its announcement, created at the transition's time.
	got, err := s.TransitionRemediationWithAlert(ctx, "rem1", pendingOnly, approve, rec.alert(nil, remediationMsg("approved/slack", inc.Key)))
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, got.State)
	last := rec.seen[len(rec.seen)-1]
	require.Equal(t, store.RemediationApproved, last.State, "the alert sees the state reached")
	require.Equal(t, "api", last.DecidedBy)
	require.Equal(t, []string{inc.Key}, incidentKeys(rec.incidents[len(rec.incidents)-1]))
	msgs, err := s.DueMessages(ctx, minutes(60), 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "approved/slack", msgs[0].ID)
	require.True(t, msgs[0].CreatedAt.Equal(approve.At), "created at %s, want the transition's %s", msgs[0].CreatedAt, approve.At)
	deliver(t, s, minutes(4), "approved/slack")

	// A nil alert is TransitionRemediation.
	_, err = s.TransitionRemediationWithAlert(ctx, "rem1", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: minutes(5), ApplyRunID: "apply1"}, nil)
	require.NoError(t, err)
	require.Empty(t, due(t, s, minutes(60), 0))

	// The failed outcome: the remediation, the raised incident and two
	// messages in one transaction, all there after a restart.
	fin := minutes(6)
	pager := remediationMsg("failed/pager", inc.Key)
	pager.Notifier = "pager"
	got, err = s.TransitionRemediationWithAlert(ctx, "rem1", []store.RemediationState{store.RemediationRunning},
		store.Transition{State: store.RemediationFailed, At: fin, Reason: "apply: Error: Cannot write file"},
		rec.alert([]store.Incident{raised}, remediationMsg("failed/slack", inc.Key), pager))
	require.NoError(t, err)
	require.Equal(t, store.RemediationFailed, got.State)
	last = rec.seen[len(rec.seen)-1]
	require.Equal(t, store.RemediationFailed, last.State)
	require.Equal(t, "apply1", last.ApplyRunID)
	require.Equal(t, "apply: Error: Cannot write file", last.Reason)

	s = reopen()
	equalRemediation(t, got, getRemediation(t, s, "rem1"))
	ins, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	require.Len(t, ins, 1)
	require.Equal(t, "critical", ins[0].Severity, "the raise is stored")
	msgs, err = s.DueMessages(ctx, fin, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"failed/slack", "failed/pager"}, []string{msgs[0].ID, msgs[1].ID})
	require.True(t, msgs[0].CreatedAt.Equal(fin), "created at the transition's time")
}

func testRemediationRace(t *testing.T, s RemediationStore, _ func() RemediationStore) {
	ctx := t.Context()
	create(t, s, proposal("a", "net", t0))
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, errs[i] = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationPending},
				store.Transition{State: store.RemediationApproved, At: minutes(1 + i), By: fmt.Sprintf("racer %d", i)})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "racers %d and %d both approved it", winner, i)
			winner = i
			continue
		}
		require.True(t, errors.Is(err, store.ErrConflict), "racer %d: %v", i, err)
	}
	require.NotEqual(t, -1, winner, "nobody approved it")
	got := getRemediation(t, s, "a")
	require.Equal(t, fmt.Sprintf("racer %d", winner), got.DecidedBy)
	require.True(t, got.DecidedAt.Equal(minutes(1+winner)))
}
