package incident

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestRaise(t *testing.T) {
	for _, tc := range []struct {
		in    notify.Severity
		steps int
		want  notify.Severity
	}{
		{notify.SeverityInfo, 1, notify.SeverityLow},
		{notify.SeverityLow, 1, notify.SeverityModerate},
		{notify.SeverityModerate, 1, notify.SeverityHigh},
		{notify.SeverityHigh, 1, notify.SeverityCritical},
		{notify.SeverityCritical, 1, notify.SeverityCritical},
		{notify.SeverityModerate, 5, notify.SeverityCritical},
		{notify.SeverityModerate, 0, notify.SeverityModerate},
		{"bogus", 1, "bogus"},
	} {
		t.Run(string(tc.in), func(t *testing.T) {
			require.Equal(t, tc.want, Raise(tc.in, tc.steps))
		})
	}
}

// remediate plays the remediation alert against the sim's incidents, as
// the store does: the changed incident replaces the stored one.
func (s *sim) remediate(at time.Duration, rem notify.Remediation) (*store.Incident, *notify.Message) {
	s.t.Helper()
	changed, msg := Remediation(t0.Add(at), s.p, s.ws, "apply-run", rem, slices.Clone(s.incidents), func() string {
		s.ids++
		return "rem-msg"
	})
	if changed != nil {
		i := slices.IndexFunc(s.incidents, func(in store.Incident) bool { return in.Key == changed.Key })
		require.GreaterOrEqual(s.t, i, 0, "the changed incident is a stored one")
		s.incidents[i] = *changed
	}
	return changed, msg
}

func TestRemediationWithoutOpenIncident(t *testing.T) {
	s := newSim(t, Policy{ConfirmAfter: 2})
	rem := notify.Remediation{ID: "r1", Result: notify.RemediationFailed, Reason: "apply: Error"}
	changed, msg := s.remediate(0, rem)
	require.Nil(t, changed, "no incident at all")
	require.Nil(t, msg)

	s.run(step{findings: []drift.Finding{fBucket}, states: map[notify.Class]store.IncidentState{notify.ClassDrift: pending}})
	for _, r := range []notify.RemediationResult{notify.RemediationAwaitingApproval, notify.RemediationApplied, notify.RemediationFailed} {
		rem.Result = r
		changed, msg = s.remediate(time.Minute, rem)
		require.Nil(t, changed, "a pending incident (confirm_after not reached) is not raised: %s", r)
		require.Nil(t, msg, "nothing is sent before the incident is open: %s", r)
	}
	require.Equal(t, string(notify.SeverityModerate), s.incident(notify.ClassDrift).Severity)

	// An open forbidden incident is not the page of a remediation.
	s = newSim(t, Policy{})
	s.run(step{findings: []drift.Finding{fForbidden}})
	changed, msg = s.remediate(time.Minute, rem)
	require.Nil(t, changed)
	require.Nil(t, msg)
}

func TestRemediationMessage(t *testing.T) {
	s := newSim(t, Policy{Owner: "team-net", Team: "net-oncall", URL: "https://dw.example/workspaces/net", Labels: map[string]string{"tier": "prod"}})
	s.run(step{findings: []drift.Finding{fBucket}, want: []string{"drift:open"}})
	in := *s.incident(notify.ClassDrift)

	rem := notify.Remediation{ID: "r1", Mode: "auto", Result: notify.RemediationApplied, Resources: 1, ApplyRunID: "apply-run",
		URL: "https://dw.example/runs/apply-run"}
	changed, msg := s.remediate(time.Minute, rem)
	require.Nil(t, changed, "an applied remediation changes nothing on the incident")
	want := &notify.Message{
		ID:    "rem-msg",
		Event: notify.EventRemediation,
		Incident: notify.Incident{
			Key: in.Key, Workspace: "net", Class: notify.ClassDrift, Severity: notify.SeverityModerate,
			Owner: "team-net", Team: "net-oncall", Labels: map[string]string{"tier": "prod"}, Since: t0,
			Findings: []drift.Finding{fBucket}, Counts: drift.Counts{Drift: 1}, RunID: "apply-run",
			URL: "https://dw.example/workspaces/net",
		},
		Remediation:  &rem,
		At:           t0.Add(time.Minute),
		PrevSeverity: notify.SeverityModerate,
	}
	require.Empty(t, cmp.Diff(want, msg))

	// Routed like the incident, with the route's overrides; the payload
	// round-trips with its remediation.
	targets := []Target{
		{Notifier: "pager", Severity: map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityHigh}, Team: "platform"},
		{Notifier: "slack"},
	}
	rows, err := Enqueue(t0, []notify.Message{*msg}, targets)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []string{"rem-msg/pager", "rem-msg/slack"}, []string{rows[0].ID, rows[1].ID})
	var got notify.Message
	require.NoError(t, json.Unmarshal(rows[1].Payload, &got))
	require.Empty(t, cmp.Diff(*msg, got))
	require.NoError(t, json.Unmarshal(rows[0].Payload, &got))
	require.Equal(t, notify.SeverityHigh, got.Incident.Severity)
	require.Equal(t, in.Key, rows[0].IncidentKey)
}

// TestRemediationFailureRaisesSeverity: a failed apply raises the open
// drift incident one step (stored, so later messages keep it, and route
// overrides are raised alike), capped at critical, until it resolves; and
// an escalated incident counts pending findings (what a failed apply can
// leave behind), so it stays open until the workspace is clean.
func TestRemediationFailureRaisesSeverity(t *testing.T) {
	s := newSim(t, Policy{RenotifyAfter: 24 * time.Hour})
	targets := []Target{
		{Notifier: "pager", Severity: map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityHigh}},
		{Notifier: "slack"},
	}
	severities := func(m *notify.Message) []notify.Severity {
		t.Helper()
		rows, err := Enqueue(t0, []notify.Message{*m}, targets)
		require.NoError(t, err)
		var out []notify.Severity
		for _, r := range rows {
			var got notify.Message
			require.NoError(t, json.Unmarshal(r.Payload, &got))
			out = append(out, got.Incident.Severity)
		}
		return out
	}
	s.run(step{findings: []drift.Finding{fBucket, fSG}, want: []string{"drift:open"}})

	changed, msg := s.remediate(time.Minute, notify.Remediation{ID: "r1", Result: notify.RemediationFailed, Reason: "apply: Error: Cannot write file"})
	require.NotNil(t, changed)
	require.Equal(t, string(notify.SeverityHigh), changed.Severity, "moderate raised one step, stored")
	require.Equal(t, store.IncidentOpen, changed.State)
	require.Equal(t, notify.SeverityHigh, msg.Incident.Severity)
	require.Equal(t, 1, msg.Incident.Escalated)
	require.Equal(t, []notify.Severity{notify.SeverityCritical, notify.SeverityHigh}, severities(msg), "the pager's high override is raised too")

	// The failed apply reverted one resource and left the other as a
	// planned create: still open, updated, still raised.
	_, msgs := s.run(step{at: time.Hour, findings: []drift.Finding{fPending}, want: []string{"drift:update"},
		states: map[notify.Class]store.IncidentState{notify.ClassDrift: open}})
	require.Equal(t, notify.SeverityHigh, msgs[0].Incident.Severity, "an update does not lower a raised severity")
	require.Equal(t, 1, msgs[0].Incident.Escalated)
	require.Equal(t, string(notify.SeverityHigh), s.incident(notify.ClassDrift).Severity)
	_, msgs = s.run(step{at: 30 * time.Hour, findings: []drift.Finding{fPending}, want: []string{"drift:renotify"}})
	require.Equal(t, notify.SeverityHigh, msgs[0].Incident.Severity, "nor does a renotify")

	// A verification failure raises again, up to critical and no further.
	_, msg = s.remediate(31*time.Hour, notify.Remediation{ID: "r2", Result: notify.RemediationVerificationFailed})
	require.Equal(t, notify.SeverityCritical, msg.Incident.Severity)
	require.Equal(t, 2, msg.Incident.Escalated)
	changed, msg = s.remediate(32*time.Hour, notify.Remediation{ID: "r3", Result: notify.RemediationFailed})
	require.Equal(t, string(notify.SeverityCritical), changed.Severity)
	require.Equal(t, notify.SeverityCritical, msg.Incident.Severity)
	require.Equal(t, []notify.Severity{notify.SeverityCritical, notify.SeverityCritical}, severities(msg))

	// Refused or awaiting approval: a note, no raise.
	changed, msg = s.remediate(33*time.Hour, notify.Remediation{ID: "r4", Result: notify.RemediationRefused, Reason: "plan_changed: re-detect"})
	require.Nil(t, changed)
	require.Equal(t, notify.SeverityCritical, msg.Incident.Severity)

	// Clean: resolved at the policy's severity, which the next incident
	// starts from.
	_, msgs = s.run(step{at: 34 * time.Hour, want: []string{"drift:resolve"}})
	require.Equal(t, notify.SeverityModerate, msgs[0].Incident.Severity)
	require.Zero(t, msgs[0].Incident.Escalated)
	require.Equal(t, string(notify.SeverityModerate), s.incident(notify.ClassDrift).Severity)
	_, msgs = s.run(step{at: 35 * time.Hour, findings: []drift.Finding{fBucket}, want: []string{"drift:open"}})
	require.Equal(t, notify.SeverityModerate, msgs[0].Incident.Severity)

	// Without an escalation, pending findings alone resolve a drift
	// incident (include_pending off), as before.
	s.run(step{at: 36 * time.Hour, findings: []drift.Finding{fPending}, want: []string{"drift:resolve"}})
}
