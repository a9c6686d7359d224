package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

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
	recovered, err := s.RecoverRuns(ctx, minutes(11))
	require.NoError(t, err)
	equal(t, []store.Run{restarted(live, minutes(11))}, recovered.Errored)
	require.Empty(t, recovered.Queued)
	equal(t, []store.WorkspaceState{st}, states(t, s), "recovering a run changed the workspace state")
	equal(t, incBefore, incidents(), "recovering a run changed the incidents")
	require.Error(t, s.FinishRunOnly(ctx, outcome(live, "applied", minutes(12))), "a run errored by a restart")
	equal(t, restarted(live, minutes(11)), getRun(t, s, "live"))
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
		require.ErrorIs(t, err, store.ErrConflict, "racer %d: %v", i, err)
	}
	require.NotEqual(t, -1, winner, "nobody approved it")
	got := getRemediation(t, s, "a")
	require.Equal(t, fmt.Sprintf("racer %d", winner), got.DecidedBy)
	require.True(t, got.DecidedAt.Equal(minutes(1+winner)))
}
