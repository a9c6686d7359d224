package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Silences survive a restart; an expired one is no longer listed.
func TestSilencesAcrossRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := openStore(t, path)
	ws := store.Silence{ID: "s1", Workspace: "net", StartsAt: t0, EndsAt: t0.Add(4 * time.Hour), Comment: "firewall migration",
		CreatedBy: "alice", CreatedAt: t0}
	lab := store.Silence{ID: "s2", Labels: map[string]string{"env": "dev"}, StartsAt: t0, EndsAt: t0.Add(time.Hour), CreatedBy: "bob", CreatedAt: t0}
	require.NoError(t, s.AddSilence(ctx, ws))
	require.NoError(t, s.AddSilence(ctx, lab))
	require.Error(t, s.AddSilence(ctx, ws), "an id is added once")
	require.ErrorContains(t, s.AddSilence(ctx, store.Silence{ID: "s3", StartsAt: t0, EndsAt: t0.Add(time.Hour)}), "a workspace or labels are required")
	require.ErrorContains(t, s.AddSilence(ctx, store.Silence{ID: "s4", Workspace: "x", StartsAt: t0, EndsAt: t0}), "must end after it starts")
	require.NoError(t, s.Close())

	s = openStore(t, path)
	got, err := s.Silences(ctx, t0.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "s2", got[0].ID, "soonest end first")
	require.Equal(t, map[string]string{"env": "dev"}, got[0].Labels)
	require.True(t, got[1].EndsAt.Equal(ws.EndsAt))
	require.Equal(t, "firewall migration", got[1].Comment)
	require.Equal(t, "alice", got[1].CreatedBy)

	exp, err := s.ExpireSilence(ctx, "s1", t0.Add(30*time.Minute))
	require.NoError(t, err)
	require.True(t, exp.EndsAt.Equal(t0.Add(30*time.Minute)))
	_, err = s.ExpireSilence(ctx, "nope", t0)
	require.ErrorIs(t, err, store.ErrNotFound)
	got, err = s.Silences(ctx, t0.Add(45*time.Minute))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "s2", got[0].ID)
}

// Held messages are not due and hold back their queue; ReleaseHeld
// replaces each queue with its collapse, after everything else, due at
// once; the other workspaces' messages are untouched.
func TestHeldMessages(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	finish := func(id, ws string, at time.Duration, msgs ...store.OutboxMessage) {
		t.Helper()
		r := store.Run{ID: id, Workspace: ws, StartedAt: t0.Add(at)}
		require.NoError(t, s.StartRun(ctx, r))
		r.Status, r.FinishedAt = drift.StatusDrift, t0.Add(at)
		ins := []store.Incident{{Key: msgs[0].IncidentKey, Workspace: ws, Class: "drift", State: store.IncidentOpen, Observations: 1}}
		_, _, err := s.FinishRunWithOutcome(ctx, r, func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			return ins, msgs
		})
		require.NoError(t, err)
	}
	held := func(id, notifier, key string) store.OutboxMessage {
		return store.OutboxMessage{ID: id, Notifier: notifier, IncidentKey: key, Payload: []byte(`{"id":"` + id + `"}`), Held: true}
	}
	finish("r1", "net", 0, held("a1", "slack", "dw-net"), held("a1p", "pager", "dw-net"))
	finish("r2", "net", time.Minute, held("a2", "slack", "dw-net"))
	finish("r3", "db", 2*time.Minute, store.OutboxMessage{ID: "b1", Notifier: "slack", IncidentKey: "dw-db", Payload: []byte(`{}`)})

	due, err := s.DueMessages(ctx, t0.Add(time.Hour), 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b1"}, msgIDs(due), "held messages are not due")
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	require.Equal(t, store.OutboxCounts{Pending: 1, Held: 2, OldestPending: t0.Add(2 * time.Minute)}, stats["slack"])
	wss, err := s.HeldWorkspaces(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"net"}, wss)

	var seen [][]string
	n, err := s.ReleaseHeld(ctx, "net", t0.Add(3*time.Hour), func(q []store.OutboxMessage) *store.OutboxMessage {
		seen = append(seen, msgIDs(q))
		if q[0].Notifier == "pager" {
			return nil // nothing to say
		}
		last := q[len(q)-1]
		last.Payload = []byte(`{"collapsed":true}`)
		return &last
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, [][]string{{"a1p"}, {"a1", "a2"}}, seen, "one queue per notifier and incident, oldest first")
	due, err = s.DueMessages(ctx, t0.Add(3*time.Hour), 0)
	require.NoError(t, err)
	require.Equal(t, []string{"b1", "a2"}, msgIDs(due), "released after everything already queued")
	require.JSONEq(t, `{"collapsed":true}`, string(due[1].Payload))
	require.False(t, due[1].Held)
	require.True(t, due[1].NextAttempt.Equal(t0.Add(3*time.Hour)))
	wss, err = s.HeldWorkspaces(ctx)
	require.NoError(t, err)
	require.Empty(t, wss)
}

func msgIDs(ms []store.OutboxMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
