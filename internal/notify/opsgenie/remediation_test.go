package opsgenie

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// TestRemediation: a remediation message is a note on the incident's
// alert; a failed apply first raises the alert's priority with its
// severity (P2 -> P1); a non-failed one adds the note alone.
func TestRemediation(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewOpsGenieServer, newTestNotifier)
	state, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.JSONEq(t, `{"priority":"P2","alert_id":"alert-0002"}`, string(state))
	before := len(srv.Requests())

	applied := notifytest.SampleMessage(notify.EventRemediation)
	applied.Incident.Severity, applied.Incident.Escalated = notify.SeverityHigh, 0
	applied.Remediation.Result, applied.Remediation.Reason = notify.RemediationApplied, ""
	state, err = notifytest.NotifyStateless(t, n, applied, state)
	require.NoError(t, err)
	require.JSONEq(t, `{"priority":"P2","alert_id":"alert-0002"}`, string(state))

	failed := notifytest.SampleMessage(notify.EventRemediation)
	state, err = notifytest.NotifyStateless(t, n, failed, state)
	require.NoError(t, err)
	require.JSONEq(t, `{"priority":"P1","alert_id":"alert-0002"}`, string(state))

	noteReq := func(note string) req {
		return req{"POST", "/v2/alerts/" + notifytest.SampleKey + "/notes", "identifierType=alias", jsonOf(t, map[string]any{
			"IdentifierType": 1, "IdentifierValue": notifytest.SampleKey, "source": "driftwatch", "note": note,
		})}
	}
	require.Equal(t, []req{
		noteReq("Remediation applied: reverted 1 resource; a verification run follows (remediation rem-0007, run run-0043).\n" +
			"Run: https://driftwatch.example.com/runs/run-0043"),
		{"PUT", "/v2/alerts/" + notifytest.SampleKey + "/priority", "identifierType=alias", jsonOf(t, map[string]any{
			"IdentifierType": 1, "IdentifierValue": notifytest.SampleKey, "priority": "P1",
		})},
		noteReq("Remediation failed (remediation rem-0007, run run-0043).\n" +
			"Reason: apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)\n" +
			"Priority raised to P1 (severity critical).\n" +
			"Run: https://driftwatch.example.com/runs/run-0043"),
	}, requests(t, srv)[before:])
	a, ok := srv.Alert(notifytest.SampleKey)
	require.True(t, ok)
	require.Equal(t, "P1", a.Priority)
	require.Equal(t, "open", a.Status)
	require.Len(t, a.Notes, 2)

	// Awaiting approval: the command to approve, and when it expires.
	require.Equal(t, "Remediation proposed: reverts 1 resource; awaiting approval (driftwatch approve rem-0007) before 2026-11-04T10:00:00Z (remediation rem-0007).",
		remediationNote(notifytest.AwaitingApproval("auto")))

	bad := notifytest.SampleMessage(notify.EventRemediation)
	bad.Remediation = nil
	_, err = notifytest.NotifyStateless(t, n, bad, state)
	require.EqualError(t, err, "opsgenie opsgenie-oncall: message msg-remediation-0001: remediation event without its remediation")
}
