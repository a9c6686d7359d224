package notifytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlackSignerKnownAnswer: the signer reproduces the example Slack
// publishes for request signing (secret, timestamp, body, signature).
func TestSlackSignerKnownAnswer(t *testing.T) {
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar" +
		"&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN" +
		"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	s := SlackSigner{Secret: "8f742231b10e8888abcd99yyyzzz85a5"}
	require.Equal(t, "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", s.Signature("1531420618", []byte(body)))

	r := s.Request("https://dw.example/api/v1/slack/interactions", []byte(body), time.Unix(1531420618, 0))
	require.Equal(t, "1531420618", r.Header.Get("X-Slack-Request-Timestamp"))
	require.Equal(t, "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", r.Header.Get("X-Slack-Signature"))
	require.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
}

// TestSlackActionPayloadBody: the form carries one payload field, a
// block_actions payload with the user, channel, action and response_url.
func TestSlackActionPayloadBody(t *testing.T) {
	p := SlackActionPayload{UserID: "U0123ABCD", UserName: "alice", Channel: "C0DRIFTW01", MessageTS: "1.2",
		ActionID: "driftwatch_approve", Value: "v", ResponseURL: "https://hooks.slack.com/actions/T/1/x", Blocks: `[{"type":"divider"}]`}
	form, err := url.ParseQuery(string(p.Body()))
	require.NoError(t, err)
	var got struct {
		Type    string
		User    struct{ ID string }
		Channel struct{ ID string }
		Message struct {
			TS     string
			Blocks []map[string]any
		}
		ResponseURL string `json:"response_url"`
		Actions     []struct {
			ActionID string `json:"action_id"`
			Value    string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(form.Get("payload")), &got))
	require.Equal(t, "block_actions", got.Type)
	require.Equal(t, "U0123ABCD", got.User.ID)
	require.Equal(t, "C0DRIFTW01", got.Channel.ID)
	require.Equal(t, "1.2", got.Message.TS)
	require.Equal(t, []map[string]any{{"type": "divider"}}, got.Message.Blocks)
	require.Equal(t, "https://hooks.slack.com/actions/T/1/x", got.ResponseURL)
	require.Len(t, got.Actions, 1)
	require.Equal(t, "driftwatch_approve", got.Actions[0].ActionID)
	require.Equal(t, "v", got.Actions[0].Value)
}

// TestSlackResponseServer records valid replies and refuses others.
func TestSlackResponseServer(t *testing.T) {
	s := NewSlackResponseServer(t)
	post := func(body string) int {
		resp, err := http.Post(s.ResponseURL("B1"), "application/json", bytes.NewBufferString(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post(`{"replace_original":true,"text":"Approved","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"ok"}}]}`))
	require.Equal(t, http.StatusBadRequest, post(`{"replace_original":true}`), "no text")
	require.Equal(t, http.StatusBadRequest, post(`{"text":"x","blocks":[{"type":"section"}]}`), "invalid blocks")
	require.Equal(t, []SlackResponse{{Path: "/actions/T0DRIFTW0/B1/hook", ContentType: "application/json", ReplaceOriginal: true, Text: "Approved",
		Blocks: json.RawMessage(`[{"type":"section","text":{"type":"mrkdwn","text":"ok"}}]`)}}, s.Responses())
	require.Len(t, s.Errors(), 2)
}

func TestSlackCheckActions(t *testing.T) {
	ok := `[{"type":"actions","block_id":"b","elements":[{"type":"button","action_id":"a","value":"v","text":{"type":"plain_text","text":"Approve"},"style":"primary",
		"confirm":{"title":{"type":"plain_text","text":"T"},"text":{"type":"plain_text","text":"X"},"confirm":{"type":"plain_text","text":"Yes"},"deny":{"type":"plain_text","text":"No"}}}]}]`
	require.NoError(t, SlackCheckActions([]byte(ok)))
	for name, bad := range map[string]string{
		"none":         `[{"type":"divider"}]`,
		"no action_id": `[{"type":"actions","elements":[{"type":"button","value":"v","text":{"type":"plain_text","text":"A"}}]}]`,
		"mrkdwn text":  `[{"type":"actions","elements":[{"type":"button","action_id":"a","text":{"type":"mrkdwn","text":"A"}}]}]`,
		"repeated id": `[{"type":"actions","elements":[{"type":"button","action_id":"a","text":{"type":"plain_text","text":"A"}},` +
			`{"type":"button","action_id":"a","text":{"type":"plain_text","text":"B"}}]}]`,
		"bad style": `[{"type":"actions","elements":[{"type":"button","action_id":"a","style":"green","text":{"type":"plain_text","text":"A"}}]}]`,
	} {
		require.Error(t, SlackCheckActions([]byte(bad)), name)
	}
}
