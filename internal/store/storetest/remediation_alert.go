package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

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
