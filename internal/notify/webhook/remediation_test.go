package webhook

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// TestRemediation: a remediation is POSTed as event "remediation", signed
// like every delivery, with the remediation object in the payload and the
// incident's raised severity; other events carry no remediation key.
func TestRemediation(t *testing.T) {
	srv := notifytest.NewWebhookServer(t, "")
	n := newTestNotifier(t, srv, nil)
	m := notifytest.SampleMessage(notify.EventRemediation)
	_, err := notifytest.NotifyStateless(t, n, m, nil)
	require.NoError(t, err)
	proposed := notifytest.SampleMessage(notify.EventRemediation)
	proposed.ID = "msg-proposed"
	proposed.Incident.Severity, proposed.Incident.Escalated = notify.SeverityHigh, 0
	proposed.Remediation = &notify.Remediation{ID: "rem-0008", Mode: "approve", Result: notify.RemediationAwaitingApproval,
		Resources: 2, ExpiresAt: time.Date(2026, 11, 4, 10, 0, 0, 0, time.FixedZone("CET", 3600))}
	_, err = notifytest.NotifyStateless(t, n, proposed, nil)
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)

	ds := srv.Deliveries()
	require.Len(t, ds, 3)
	d := ds[0]
	require.True(t, d.Verified, d.Reason)
	require.NoError(t, Verify([]byte(srv.Secret), d.Header, d.Body, time.Now(), DefaultTolerance))
	require.Equal(t, "remediation", d.Header.Get(HeaderEvent))
	require.Equal(t, "msg-remediation-0001", d.Header.Get(HeaderDelivery))
	require.Equal(t, "remediation", d.Payload.Event)
	require.Equal(t, "critical", d.Payload.Incident.Severity)
	require.Equal(t, 1, d.Payload.Incident.Escalated)
	require.Equal(t, &notifytest.WebhookRemediation{
		ID: "rem-0007", Mode: "auto", Result: "failed",
		Reason:    "apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)",
		Resources: 1, ApplyRunID: "run-0043", URL: "https://driftwatch.example.com/runs/run-0043",
	}, d.Payload.Remediation)

	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(ds[1].Body, &raw))
	require.JSONEq(t, `{"id":"rem-0008","mode":"approve","result":"awaiting_approval","reason":"","resources":2,
		"apply_run_id":"","expires_at":"2026-11-04T09:00:00Z","url":""}`, string(raw["remediation"]))

	raw = nil
	require.NoError(t, json.Unmarshal(ds[2].Body, &raw))
	require.NotContains(t, raw, "remediation", "only remediation events carry one")
	require.NotContains(t, string(ds[2].Body), `"escalated"`)
}
