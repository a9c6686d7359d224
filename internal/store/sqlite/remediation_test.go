package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

func TestRemediations(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "dw.db")
	s := openStore(t, path)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

	a := store.Remediation{ID: "a", Workspace: "net", DetectRunID: "run1", Mode: "approve",
		ChangeSet: []byte(`{"entries":[{"address":"x.y","action":"update","attributes":["content"]}]}`), ChangeSetHash: "h1",
		State: store.RemediationPending, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	require.NoError(t, s.CreateRemediation(ctx, a))
	require.ErrorContains(t, s.CreateRemediation(ctx, a), "already exists")
	b := a
	b.ID, b.ExpiresAt, b.CreatedAt = "b", t0.Add(time.Minute), t0.Add(time.Second)
	require.NoError(t, s.CreateRemediation(ctx, b))
	c := store.Remediation{ID: "c", Workspace: "dns", State: store.RemediationRefused, Reason: "forbidden: x",
		Refusals: []byte(`[{"code":"forbidden","reason":"x"}]`), CreatedAt: t0.Add(2 * time.Second)}
	require.NoError(t, s.CreateRemediation(ctx, c))

	got, err := s.Remediation(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "h1", got.ChangeSetHash)
	require.True(t, got.ExpiresAt.Equal(a.ExpiresAt))
	require.JSONEq(t, string(a.ChangeSet), string(got.ChangeSet))
	require.JSONEq(t, `[]`, string(got.Refusals))
	require.Nil(t, got.Outcome)
	_, err = s.Remediation(ctx, "zz")
	require.ErrorIs(t, err, store.ErrNotFound)

	list, err := s.Remediations(ctx, "net", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, []string{list[0].ID, list[1].ID}, "newest first")
	list, err = s.Remediations(ctx, "", 1)
	require.NoError(t, err)
	require.Equal(t, "c", list[0].ID)

	// Expiry: only pending ones past their time.
	exp, err := s.ExpireRemediations(ctx, t0.Add(2*time.Minute))
	require.NoError(t, err)
	require.Len(t, exp, 1)
	require.Equal(t, "b", exp[0].ID)
	got, _ = s.Remediation(ctx, "b")
	require.Equal(t, store.RemediationExpired, got.State)
	require.Equal(t, "expiry", got.DecidedBy)

	// Compare-and-set transitions.
	_, err = s.TransitionRemediation(ctx, "b", []store.RemediationState{store.RemediationPending},
		store.Transition{State: store.RemediationApproved, At: t0, By: "api"})
	require.ErrorIs(t, err, store.ErrConflict)
	got, err = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationPending},
		store.Transition{State: store.RemediationApproved, At: t0.Add(3 * time.Minute), By: "api"})
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, got.State)
	require.Equal(t, "api", got.DecidedBy)
	require.True(t, got.FinishedAt.IsZero())
	got, err = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: t0.Add(4 * time.Minute), ApplyRunID: "run2"})
	require.NoError(t, err)
	require.Equal(t, "run2", got.ApplyRunID)
	byRun, err := s.RemediationByApplyRun(ctx, "run2")
	require.NoError(t, err)
	require.Equal(t, "a", byRun.ID)
	for _, id := range []string{"run1", "nope", ""} { // a detect run, unknown, and no apply run yet
		_, err = s.RemediationByApplyRun(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, id)
	}
	_, err = s.TransitionRemediation(ctx, "zz", nil, store.Transition{State: store.RemediationFailed, At: t0})
	require.ErrorIs(t, err, store.ErrNotFound)

	// A restart during the apply marks it failed; its run was running.
	require.NoError(t, s.Close())
	s = openStore(t, path)
	intr, err := s.InterruptRemediations(ctx, t0.Add(5*time.Minute))
	require.NoError(t, err)
	require.Len(t, intr, 1)
	got, _ = s.Remediation(ctx, "a")
	require.Equal(t, store.RemediationFailed, got.State)
	require.Equal(t, "api", got.DecidedBy, "the decision is kept")
	require.False(t, got.FinishedAt.IsZero())

	got, err = s.TransitionRemediation(ctx, "a", []store.RemediationState{store.RemediationFailed},
		store.Transition{State: store.RemediationApplied, At: t0, Outcome: []byte(`{"result":"applied"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"result":"applied"}`, string(got.Outcome))
}

func TestRemediationPausedPersists(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "dw.db")
	s := openStore(t, path)
	p, err := s.RemediationPaused(ctx)
	require.NoError(t, err)
	require.False(t, p)
	require.NoError(t, s.SetRemediationPaused(ctx, true))
	require.NoError(t, s.Close())
	s = openStore(t, path)
	p, err = s.RemediationPaused(ctx)
	require.NoError(t, err)
	require.True(t, p, "survives a restart")
	require.NoError(t, s.SetRemediationPaused(ctx, false))
	p, _ = s.RemediationPaused(ctx)
	require.False(t, p)
}

func TestFinishRunOnly(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "dw.db"))
	t0 := time.Now().UTC()
	require.NoError(t, s.StartRun(ctx, store.Run{ID: "r", Workspace: "net", Trigger: "remediate", StartedAt: t0}))
	require.NoError(t, s.FinishRunOnly(ctx, store.Run{ID: "r", Status: "applied", FinishedAt: t0.Add(time.Second)}))
	r, err := s.Run(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "applied", string(r.Status))
	_, err = s.Workspace(ctx, "net")
	require.ErrorIs(t, err, store.ErrNotFound, "the workspace's state is untouched")
	require.Error(t, s.FinishRunOnly(ctx, store.Run{ID: "r", Status: "applied", FinishedAt: t0}), "only a running run")
}
