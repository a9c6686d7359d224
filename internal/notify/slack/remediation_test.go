package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func remediationMessage(id string, res notify.RemediationResult, reason string, sev notify.Severity, escalated int) notify.Message {
	m := testMessage(notify.EventRemediation, id, sg)
	m.Incident.Severity, m.Incident.Escalated = sev, escalated
	m.Incident.RunID = "apply-7"
	m.At = since.Add(time.Hour)
	m.Remediation = &notify.Remediation{ID: "rem-1", Mode: "approve", Result: res, Reason: reason, Resources: 1,
		ApplyRunID: "apply-7", URL: "https://dw.example/runs/apply-7"}
	return m
}

// TestBotRemediation: remediation messages are thread replies under the
// incident's parent (never a new parent); only a failed apply also
// updates the parent, which then shows the raised severity and
// "remediation failed".
func TestBotRemediation(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, token, logs := newBot(t, srv, 0)
	st := &store{t: t, srv: srv}
	open := testMessage(notify.EventOpen, "msg-open", sg)
	open.Incident.Severity = notify.SeverityModerate
	require.NoError(t, st.deliver(n, open))
	parentTS := st.parent().TS

	proposed := remediationMessage("msg-proposed", notify.RemediationAwaitingApproval, "", notify.SeverityModerate, 0)
	proposed.Remediation.ApplyRunID, proposed.Remediation.URL = "", ""
	proposed.Remediation.ExpiresAt = since.Add(25 * time.Hour)
	require.NoError(t, st.deliver(n, proposed))
	require.Equal(t, []string{"chat.postMessage"}, srv.Methods(), "a reply only: the parent is left alone")
	reply := srv.Requests()[0]
	require.Equal(t, parentTS, reply.Param("thread_ts"))
	require.Equal(t, testChannel, reply.Param("channel"))
	require.Empty(t, reply.Param("reply_broadcast"))
	require.Equal(t, &notifytest.SlackMetadata{EventType: "driftwatch_incident_update", EventPayload: map[string]any{
		"incident_key": "drift-prod-network", "message_id": "msg-proposed",
	}}, reply.Metadata())
	require.Equal(t, "Remediation awaiting approval", reply.Param("text"))
	body := plainBlocks(t, reply.Param("blocks"))
	require.Contains(t, body, "Reverts 1 resource. Approve with `driftwatch approve rem-1` before <!date^")
	require.NoError(t, notifytest.SlackCheckBlocks([]byte(reply.Param("blocks"))))

	applied := remediationMessage("msg-applied", notify.RemediationApplied, "", notify.SeverityModerate, 0)
	require.NoError(t, st.deliver(n, applied))
	require.Equal(t, []string{"chat.postMessage"}, srv.Methods())
	require.Equal(t, "Remediation applied", srv.Requests()[0].Param("text"))
	require.Contains(t, plainBlocks(t, srv.Requests()[0].Param("blocks")), "Reverted 1 resource; a verification run follows.")
	require.Contains(t, plainBlocks(t, srv.Requests()[0].Param("blocks")), "<https://dw.example/runs/apply-7|Open the apply run>")

	failed := remediationMessage("msg-failed", notify.RemediationFailed, "apply: Error: Cannot write file (dwtest_file.b, main.tf line 13)", notify.SeverityHigh, 1)
	require.NoError(t, st.deliver(n, failed))
	require.Equal(t, []string{"chat.update", "chat.postMessage"}, srv.Methods())
	upd := srv.Requests()[0]
	require.Equal(t, parentTS, upd.Param("ts"))
	require.Equal(t, "msg-open", upd.Metadata().EventPayload["message_id"], "the parent keeps its metadata")
	parent := srv.Messages(testChannel)
	require.Len(t, parent, 1, "never a new parent")
	require.Equal(t, 1, parent[0].Edits)
	require.Contains(t, string(parent[0].Blocks), ":red_circle: high")
	require.Contains(t, string(parent[0].Blocks), "Open for 1h · remediation failed")
	rep := srv.Requests()[1]
	require.Equal(t, parentTS, rep.Param("thread_ts"))
	require.Equal(t, "Remediation failed: apply: Error: Cannot write file (dwtest_file.b, main.tf line 13) (severity raised to high)", rep.Param("text"))
	require.Contains(t, plainBlocks(t, rep.Param("blocks")), "Severity raised to :red_circle: *high*.")

	require.Len(t, srv.Replies(testChannel, parentTS), 3)
	require.False(t, st.parent().Resolved)
	require.NotContains(t, logs(), token)

	// A later update keeps showing the raise on the parent.
	update := testMessage(notify.EventUpdate, "msg-update", sg, bucket)
	update.Incident.Severity, update.Incident.Escalated = notify.SeverityHigh, 1
	require.NoError(t, st.deliver(n, update))
	require.Contains(t, string(srv.Messages(testChannel)[0].Blocks), "remediation failed")
}

// plainBlocks re-encodes posted blocks without JSON's HTML escaping.
func plainBlocks(t *testing.T, raw string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return b.String()
}

func TestRemediationWithoutPayload(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _, _ := newBot(t, srv, 0)
	m := remediationMessage("msg-x", notify.RemediationApplied, "", notify.SeverityModerate, 0)
	m.Remediation = nil
	_, err := n.Notify(t.Context(), m, nil, nil)
	require.EqualError(t, err, "slack slack-oncall: message msg-x: remediation event without its remediation")
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
	require.Empty(t, srv.Methods())
}

func TestWebhookRemediation(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _ := newHook(t, srv, srv.WebhookURL())
	m := remediationMessage("msg-failed", notify.RemediationVerificationFailed, "still not converged after apply: aws_security_group.web (drift update)", notify.SeverityCritical, 1)
	_, err := n.Notify(t.Context(), m, nil, nil)
	require.NoError(t, err)
	got := srv.Messages(notifytest.SlackWebhookChannel)
	require.Len(t, got, 1)
	require.Equal(t, "[critical] Drift in prod-network: Remediation verification failed: still not converged after apply: aws_security_group.web (drift update) (severity raised to critical)", got[0].Text)
	blocks := string(got[0].Blocks)
	require.Contains(t, blocks, "Remediation verification failed: Drift in prod-network", "in the header")
	require.Contains(t, blocks, "*Reason:* still not converged after apply")
	require.Less(t, strings.Index(blocks, "Remediation verification failed*"), strings.Index(blocks, "*Severity*"), "what happened comes before the status")
	require.NoError(t, notifytest.SlackCheckBlocks(got[0].Blocks))
}
