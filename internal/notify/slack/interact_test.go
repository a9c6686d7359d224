package slack

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// wantActions is the exact actions block of remediation rem-1 posted by
// notifier slack-oncall.
const wantActions = `{"type":"actions","block_id":"driftwatch_remediation_actions","elements":[
	{"type":"button","text":{"type":"plain_text","text":"Approve","emoji":true},"action_id":"driftwatch_approve",
	 "value":"{\"notifier\":\"slack-oncall\",\"remediation\":\"rem-1\",\"hash\":\"cs-9f2\"}","style":"primary",
	 "confirm":{"title":{"type":"plain_text","text":"Approve remediation?","emoji":true},
		"text":{"type":"plain_text","text":"Revert 1 resource in prod-network to the Terraform configuration.","emoji":true},
		"confirm":{"type":"plain_text","text":"Approve","emoji":true},"deny":{"type":"plain_text","text":"Cancel","emoji":true}}},
	{"type":"button","text":{"type":"plain_text","text":"Reject","emoji":true},"action_id":"driftwatch_reject",
	 "value":"{\"notifier\":\"slack-oncall\",\"remediation\":\"rem-1\",\"hash\":\"cs-9f2\"}","style":"danger",
	 "confirm":{"title":{"type":"plain_text","text":"Reject remediation?","emoji":true},
		"text":{"type":"plain_text","text":"The same change set will not be proposed again.","emoji":true},
		"confirm":{"type":"plain_text","text":"Reject","emoji":true},"deny":{"type":"plain_text","text":"Cancel","emoji":true}}}]}`

func awaitingApproval(id string) notify.Message {
	m := remediationMessage(id, notify.RemediationAwaitingApproval, "", notify.SeverityModerate, 0)
	m.Remediation.ApplyRunID, m.Remediation.URL = "", ""
	m.Remediation.ExpiresAt = since.Add(25 * time.Hour)
	m.Remediation.ChangeSetHash = "cs-9f2" // the button approves this change set only
	return m
}

// TestThreadBlocksWithActionsExact: the thread reply of an awaiting
// approval remediation, with the buttons right under the summary.
func TestThreadBlocksWithActionsExact(t *testing.T) {
	m := awaitingApproval("msg-proposed")
	n := &Notifier{name: "slack-oncall", interactive: true}
	want := `[
	{"type":"section","text":{"type":"mrkdwn","text":":hourglass_flowing_sand: *Remediation awaiting approval* · remediation ` + "`rem-1`" + ` (approve)\nReverts 1 resource. Approve with ` + "`driftwatch approve rem-1`" + ` before <!date^1793786400^{date_short_pretty} {time}|2026-11-04 10:00 UTC>."}},
	` + wantActions + `,
	{"type":"context","elements":[{"type":"mrkdwn","text":"driftwatch · run ` + "`apply-7`" + ` · incident ` + "`drift-prod-network`" + `"}]}
]`
	blocks := threadBlocks(m, n.actions(m))
	require.JSONEq(t, want, blocksJSON(t, blocks))
	requireWithinLimits(t, blocks)
	require.NoError(t, notifytest.SlackCheckActions([]byte(blocksJSON(t, blocks))))
}

// TestActionsOnlyWhenAwaitingApproval: the buttons appear on awaiting
// approval remediation messages of an interactive notifier, and on no
// other message.
func TestActionsOnlyWhenAwaitingApproval(t *testing.T) {
	on := &Notifier{name: "slack-oncall", interactive: true}
	off := &Notifier{name: "slack-oncall"}
	require.Len(t, on.actions(awaitingApproval("m")), 1)
	require.Empty(t, off.actions(awaitingApproval("m")), "interactivity off")
	for _, res := range []notify.RemediationResult{notify.RemediationApproved, notify.RemediationApplied, notify.RemediationFailed,
		notify.RemediationVerificationFailed, notify.RemediationRefused} {
		require.Empty(t, on.actions(remediationMessage("m", res, "", notify.SeverityHigh, 0)), res)
	}
	for _, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventRenotify, notify.EventResolve} {
		require.Empty(t, on.actions(testMessage(ev, "m", sg)), ev)
	}
}

func TestActionValue(t *testing.T) {
	v := ActionValue{Notifier: "slack-oncall", Remediation: "rem-1", Hash: "abc"}
	got, err := ParseActionValue(v.String())
	require.NoError(t, err)
	require.Equal(t, v, got)
	for _, bad := range []string{"", "rem-1", `{"notifier":"slack-oncall"}`, `{"remediation":"rem-1"}`, strings.Repeat("x", 2001)} {
		_, err := ParseActionValue(bad)
		require.Error(t, err, bad)
	}
}

// newInteractiveBot is newBot with Config.Interactive.
func newInteractiveBot(t *testing.T, srv *notifytest.SlackServer) *Notifier {
	t.Helper()
	token := "xoxb-" + notifytest.Canary("token")
	srv.SetToken(token)
	n, err := New(Config{
		Name: "slack-oncall", Mode: ModeBot, TokenFile: writeSecret(t, token), Channel: testChannel,
		APIURL: strings.TrimSuffix(srv.APIURL(), "/"), Interactive: true,
	}, &http.Client{}, nil)
	require.NoError(t, err)
	return n
}

// TestBotRemediationButtons: an interactive bot's awaiting-approval reply
// carries the buttons, its later remediation replies and the parent none;
// a notifier without interactivity posts none.
func TestBotRemediationButtons(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n := newInteractiveBot(t, srv)
	st := &store{t: t, srv: srv}
	require.NoError(t, st.deliver(n, testMessage(notify.EventOpen, "msg-open", sg)))
	require.NotContains(t, string(srv.Messages(testChannel)[0].Blocks), ActionsBlockID)

	require.NoError(t, st.deliver(n, awaitingApproval("msg-proposed")))
	reply := srv.Requests()[0].Param("blocks")
	require.Contains(t, plainBlocks(t, reply), `"action_id":"driftwatch_approve"`)
	require.Contains(t, plainBlocks(t, reply), `"action_id":"driftwatch_reject"`)
	require.NoError(t, notifytest.SlackCheckBlocks([]byte(reply)))
	require.NoError(t, notifytest.SlackCheckActions([]byte(reply)))

	require.NoError(t, st.deliver(n, remediationMessage("msg-approved", notify.RemediationApproved, "", notify.SeverityModerate, 0)))
	require.NotContains(t, srv.Requests()[0].Param("blocks"), ActionsBlockID)

	plain := notifytest.NewSlackServer(t)
	pn, _, _ := newBot(t, plain, 0)
	pst := &store{t: t, srv: plain}
	require.NoError(t, pst.deliver(pn, testMessage(notify.EventOpen, "msg-open", sg)))
	require.NoError(t, pst.deliver(pn, awaitingApproval("msg-proposed")))
	require.NotContains(t, plain.Requests()[0].Param("blocks"), ActionsBlockID, "interactivity off")
}

// TestWebhookRemediationButtons: a webhook message awaiting approval has
// the buttons under the remediation section, before the status.
func TestWebhookRemediationButtons(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, err := New(Config{Name: "slack-oncall", Mode: ModeWebhook, WebhookURLFile: writeSecret(t, srv.WebhookURL()), Interactive: true}, nil, nil)
	require.NoError(t, err)
	m := awaitingApproval("msg-proposed")
	m.Incident.Findings = append(m.Incident.Findings, bucket)
	_, err = n.Notify(t.Context(), m, nil, nil)
	require.NoError(t, err)
	got := srv.Messages(notifytest.SlackWebhookChannel)
	require.Len(t, got, 1)
	blocks := string(got[0].Blocks)
	require.NoError(t, notifytest.SlackCheckBlocks(got[0].Blocks))
	require.NoError(t, notifytest.SlackCheckActions(got[0].Blocks))
	require.Less(t, strings.Index(blocks, "Remediation awaiting approval*"), strings.Index(blocks, ActionsBlockID))
	require.Less(t, strings.Index(blocks, ActionsBlockID), strings.Index(blocks, "*Severity*"))

	// Within the block limit with a full findings list.
	many := awaitingApproval("msg-many")
	for i := range 400 {
		f := sg
		f.Address = "aws_security_group.web" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		many.Incident.Findings = append(many.Incident.Findings, f)
	}
	requireWithinLimits(t, webhookBlocks(many, (&Notifier{name: "slack-oncall", interactive: true}).actions(many)))
}
