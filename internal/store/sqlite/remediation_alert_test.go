package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// TestRemediationAlert: a remediation's announcement (incident changes and
// outbox messages) is written in the remediation's own transaction, after
// the incident's earlier messages, and survives a reopen of the file; a
// failing or panicking alert writes nothing, the remediation included.
func TestRemediationAlert(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "dw.db")
	s, err := sqlite.Open(ctx, path, testLogger(t))
	require.NoError(t, err)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

	// A detection run opens the drift incident and enqueues its page.
	open := store.Incident{Key: "dw-drift-net", Workspace: "net", Class: "drift", State: store.IncidentOpen,
		Observations: 1, OpenedAt: t0, NotifiedAt: t0, Severity: "moderate"}
	require.NoError(t, s.StartRun(ctx, store.Run{ID: "run1", Workspace: "net", Trigger: "schedule", StartedAt: t0, Status: store.RunRunning}))
	_, _, err = s.FinishRunWithOutcome(ctx, store.Run{ID: "run1", Workspace: "net", FinishedAt: t0.Add(time.Minute), Status: drift.StatusDrift,
		Findings: []drift.Finding{{Kind: drift.KindDrift, Address: "a.b", Type: "a", Action: "update"}}},
		func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			return []store.Incident{open}, []store.OutboxMessage{{ID: "open/slack", Notifier: "slack", IncidentKey: open.Key, Payload: []byte(`{"event":"open"}`)}}
		})
	require.NoError(t, err)

	msg := func(id string) store.OutboxMessage {
		return store.OutboxMessage{ID: id, Notifier: "slack", IncidentKey: open.Key, Payload: []byte(`{"event":"remediation"}`)}
	}
	var seen []store.Remediation
	var seenIncidents [][]store.Incident
	announce := func(changed []store.Incident, msgs ...store.OutboxMessage) store.RemediationAlert {
		return func(r store.Remediation, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			seen = append(seen, r)
			seenIncidents = append(seenIncidents, incidents)
			return changed, msgs
		}
	}

	// Created with its announcement.
	rem := store.Remediation{ID: "rem1", Workspace: "net", DetectRunID: "run1", Mode: "approve", State: store.RemediationPending,
		CreatedAt: t0.Add(2 * time.Minute), ExpiresAt: t0.Add(time.Hour)}
	require.NoError(t, s.CreateRemediationWithAlert(ctx, rem, announce(nil, msg("proposed/slack"))))
	require.Equal(t, store.RemediationPending, seen[0].State, "the alert sees the remediation as written")
	require.Equal(t, []string{open.Key}, keys(seenIncidents[0]))
	// In the incident's order: the page first, then the proposal.
	require.Equal(t, []string{"open/slack"}, dueIDs(t, s, t0.Add(time.Hour)))
	require.NoError(t, s.MarkDelivered(ctx, "open/slack", t0.Add(3*time.Minute), nil))
	due, err := s.DueMessages(ctx, t0.Add(time.Hour), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, "proposed/slack", due[0].ID)
	require.True(t, due[0].CreatedAt.Equal(rem.CreatedAt), "created at the remediation's time")

	// Failures roll back the transition as well as the announcement.
	running := []store.RemediationState{store.RemediationPending}
	to := store.Transition{State: store.RemediationApproved, At: t0.Add(4 * time.Minute), By: "api"}
	raised := open
	raised.Severity = "high"
	for name, alert := range map[string]store.RemediationAlert{
		"panics":           func(store.Remediation, []store.Incident) ([]store.Incident, []store.OutboxMessage) { panic("boom") },
		"duplicate id":     announce([]store.Incident{raised}, msg("proposed/slack")),
		"unknown incident": announce(nil, store.OutboxMessage{ID: "x/slack", Notifier: "slack", IncidentKey: "nope", Payload: []byte(`{}`)}),
		"other workspace":  announce([]store.Incident{{Key: "k2", Workspace: "dns", Class: "drift", State: store.IncidentOpen}}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.TransitionRemediationWithAlert(ctx, "rem1", running, to, alert)
			require.Error(t, err)
			got, err := s.Remediation(ctx, "rem1")
			require.NoError(t, err)
			require.Equal(t, store.RemediationPending, got.State, "the transition is rolled back")
			ins, err := s.Incidents(ctx, "net")
			require.NoError(t, err)
			require.Equal(t, "moderate", ins[0].Severity)
			require.Equal(t, []string{"proposed/slack"}, dueIDs(t, s, t0.Add(time.Hour)))
		})
	}
	err = s.CreateRemediationWithAlert(ctx, store.Remediation{ID: "rem2", Workspace: "net", CreatedAt: t0},
		func(store.Remediation, []store.Incident) ([]store.Incident, []store.OutboxMessage) { panic("boom") })
	require.ErrorContains(t, err, "decide panicked: boom")
	_, err = s.Remediation(ctx, "rem2")
	require.ErrorIs(t, err, store.ErrNotFound, "a failed announcement does not create the remediation")

	// A transition refused by its state never calls the alert.
	n := len(seen)
	_, err = s.TransitionRemediationWithAlert(ctx, "rem1", []store.RemediationState{store.RemediationRunning}, to, announce(nil, msg("never/slack")))
	require.ErrorIs(t, err, store.ErrConflict)
	require.Len(t, seen, n)

	// The failed outcome: the remediation, the raised incident and the
	// message in one transaction, all there after a reopen.
	require.NoError(t, s.MarkDelivered(ctx, "proposed/slack", t0.Add(5*time.Minute), nil))
	_, err = s.TransitionRemediation(ctx, "rem1", running, to)
	require.NoError(t, err)
	_, err = s.TransitionRemediation(ctx, "rem1", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: t0.Add(6 * time.Minute), ApplyRunID: "apply1"})
	require.NoError(t, err)
	fin := t0.Add(7 * time.Minute)
	out, err := s.TransitionRemediationWithAlert(ctx, "rem1", []store.RemediationState{store.RemediationRunning},
		store.Transition{State: store.RemediationFailed, At: fin, Reason: "apply: Error: Cannot write file"},
		announce([]store.Incident{raised}, msg("failed/slack"), store.OutboxMessage{ID: "failed/pager", Notifier: "pager", IncidentKey: open.Key, Payload: []byte(`{}`)}))
	require.NoError(t, err)
	require.Equal(t, store.RemediationFailed, out.State)
	last := seen[len(seen)-1]
	require.Equal(t, store.RemediationFailed, last.State, "the alert sees the state reached")
	require.Equal(t, "apply1", last.ApplyRunID)
	require.Equal(t, "apply: Error: Cannot write file", last.Reason)
	require.NoError(t, s.Close())

	s = openStore(t, path)
	got, err := s.Remediation(ctx, "rem1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationFailed, got.State)
	ins, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	require.Equal(t, "high", ins[0].Severity, "the raise is stored")
	require.Equal(t, store.IncidentOpen, ins[0].State)
	due, err = s.DueMessages(ctx, fin, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"failed/slack", "failed/pager"}, []string{due[0].ID, due[1].ID})
	require.True(t, due[0].CreatedAt.Equal(fin), "created at the transition's time")
}

func keys(ins []store.Incident) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Key)
	}
	return out
}

func dueIDs(t *testing.T, s *sqlite.Store, now time.Time) []string {
	t.Helper()
	msgs, err := s.DueMessages(t.Context(), now, 0)
	require.NoError(t, err)
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}
