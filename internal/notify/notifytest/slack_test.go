package notifytest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"
)

func newSlackClient(s *SlackServer, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
}

func section(text string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
}

func TestSlackServerThreadsAndMetadata(t *testing.T) {
	s := NewSlackServer(t)
	api := newSlackClient(s, SlackTestToken)
	ctx := t.Context()
	md := slack.SlackMetadata{EventType: "driftwatch_incident", EventPayload: map[string]any{"message_id": "m1"}}

	ch, parent, err := api.PostMessageContext(ctx, "C0TEST01", slack.MsgOptionText("parent", false),
		slack.MsgOptionBlocks(section("hello")), slack.MsgOptionMetadata(md))
	require.NoError(t, err)
	require.Equal(t, "C0TEST01", ch)
	_, reply, err := api.PostMessageContext(ctx, ch, slack.MsgOptionText("reply", false), slack.MsgOptionTS(parent))
	require.NoError(t, err)
	require.Greater(t, reply, parent, "ts values increase")
	_, _, _, err = api.UpdateMessageContext(ctx, ch, parent, slack.MsgOptionText("parent v2", false), slack.MsgOptionBlocks(section("v2")))
	require.NoError(t, err)

	t.Run("accessors", func(t *testing.T) {
		msgs := s.Messages(ch)
		require.Len(t, msgs, 1)
		require.Equal(t, parent, msgs[0].TS)
		require.Equal(t, "parent v2", msgs[0].Text)
		require.Equal(t, 1, msgs[0].Edits)
		require.JSONEq(t, `[{"type":"section","text":{"type":"mrkdwn","text":"v2"}}]`, string(msgs[0].Blocks))
		require.Equal(t, "m1", msgs[0].Metadata.EventPayload["message_id"])
		replies := s.Replies(ch, parent)
		require.Len(t, replies, 1)
		require.Equal(t, reply, replies[0].TS)
		require.Equal(t, parent, replies[0].ThreadTS)
	})

	t.Run("history without metadata unless asked", func(t *testing.T) {
		h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: ch})
		require.NoError(t, err)
		require.Len(t, h.Messages, 1, "thread replies are not in the history")
		require.Empty(t, h.Messages[0].Metadata.EventType)
		require.Equal(t, 1, h.Messages[0].ReplyCount)

		h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: ch, IncludeAllMetadata: true})
		require.NoError(t, err)
		require.Equal(t, "driftwatch_incident", h.Messages[0].Metadata.EventType)
	})

	t.Run("replies lead with the parent", func(t *testing.T) {
		msgs, more, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: ch, Timestamp: parent})
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, msgs, 2)
		require.Equal(t, parent, msgs[0].Timestamp)
		require.Equal(t, reply, msgs[1].Timestamp)
		_, _, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: ch, Timestamp: "1.000001"})
		require.EqualError(t, err, "thread_not_found")
	})

	t.Run("requests recorded without the token", func(t *testing.T) {
		methods := s.Methods()
		require.Equal(t, []string{"chat.postMessage", "chat.postMessage", "chat.update"}, methods[:3])
		post := s.RequestsFor("chat.postMessage")[1]
		require.Equal(t, "form", post.Auth)
		require.Equal(t, "/api/chat.postMessage", post.Path)
		require.Equal(t, parent, post.Param("thread_ts"))
		require.False(t, post.Form.Has("token"))
		first := s.RequestsFor("chat.postMessage")[0]
		require.Equal(t, "m1", first.Metadata().EventPayload["message_id"])
		require.Len(t, first.Blocks(), 1)
	})

	t.Run("unknown message", func(t *testing.T) {
		_, _, _, err := api.UpdateMessageContext(ctx, ch, "1.000001", slack.MsgOptionText("x", false))
		require.EqualError(t, err, "message_not_found")
		_, _, err = api.PostMessageContext(ctx, ch, slack.MsgOptionText("x", false), slack.MsgOptionTS("1.000001"))
		require.EqualError(t, err, "thread_not_found")
	})
}

func TestSlackServerAuth(t *testing.T) {
	s := NewSlackServer(t)
	_, _, err := newSlackClient(s, "xoxb-wrong").PostMessageContext(t.Context(), "C0TEST01", slack.MsgOptionText("x", false))
	require.EqualError(t, err, "invalid_auth")
	_, _, err = newSlackClient(s, "").PostMessageContext(t.Context(), "C0TEST01", slack.MsgOptionText("x", false))
	require.EqualError(t, err, "not_authed")

	s.SetToken("xoxb-rotated")
	_, _, err = newSlackClient(s, "xoxb-rotated").PostMessageContext(t.Context(), "C0TEST01", slack.MsgOptionText("x", false))
	require.NoError(t, err)

	// A JSON body with a bearer token, as Slack's JSON API takes it.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.APIURL()+"chat.postMessage",
		strings.NewReader(`{"channel":"C0TEST01","text":"json","blocks":[{"type":"divider"}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer xoxb-rotated")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		OK bool   `json:"ok"`
		TS string `json:"ts"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.True(t, body.OK)
	last := s.Requests()[len(s.Requests())-1]
	require.Equal(t, "bearer", last.Auth)
	require.Equal(t, "json", last.Param("text"))
	require.Len(t, last.Blocks(), 1)
}

func TestSlackServerHistoryPagination(t *testing.T) {
	s := NewSlackServer(t)
	api := newSlackClient(s, SlackTestToken)
	first := s.AddMessage(SlackMessage{Channel: "C0TEST01", Text: "first"})
	for range 249 {
		s.AddMessage(SlackMessage{Channel: "C0TEST01", Text: "noise"})
	}
	params := &slack.GetConversationHistoryParameters{ChannelID: "C0TEST01", Limit: 100}
	var got []string
	for pages := 1; ; pages++ {
		h, err := api.GetConversationHistoryContext(t.Context(), params)
		require.NoError(t, err)
		for _, m := range h.Messages {
			got = append(got, m.Timestamp)
		}
		if !h.HasMore {
			require.Equal(t, 3, pages)
			break
		}
		params.Cursor = h.ResponseMetaData.NextCursor
	}
	require.Len(t, got, 250)
	require.Equal(t, first, got[249], "newest first")

	h, err := api.GetConversationHistoryContext(t.Context(), &slack.GetConversationHistoryParameters{ChannelID: "C0TEST01", Oldest: got[1], Limit: 999})
	require.NoError(t, err)
	require.Len(t, h.Messages, 1, "oldest is exclusive")
	h, err = api.GetConversationHistoryContext(t.Context(), &slack.GetConversationHistoryParameters{ChannelID: "C0TEST01", Oldest: got[1], Inclusive: true, Limit: 999})
	require.NoError(t, err)
	require.Len(t, h.Messages, 2)
}

func TestSlackServerFailures(t *testing.T) {
	s := NewSlackServer(t)
	api := newSlackClient(s, SlackTestToken)
	post := func() error {
		_, _, err := api.PostMessageContext(t.Context(), "C0TEST01", slack.MsgOptionText("x", false))
		return err
	}

	s.FailNext(1, http.StatusTooManyRequests, "ratelimited", 1500*time.Millisecond)
	var rl *slack.RateLimitedError
	require.ErrorAs(t, post(), &rl)
	require.Equal(t, 2*time.Second, rl.RetryAfter, "Retry-After is whole seconds, rounded up")

	s.FailNext(1, http.StatusServiceUnavailable, "", 0)
	var sc slack.StatusCodeError
	require.ErrorAs(t, post(), &sc)
	require.Equal(t, http.StatusServiceUnavailable, sc.Code)

	s.FailNext(1, http.StatusOK, "channel_not_found", 0)
	require.EqualError(t, post(), "channel_not_found")

	s.FailNextOn("chat.update", 1, http.StatusOK, "cant_update_message", 0)
	require.NoError(t, post(), "a failure for another method waits")
	_, _, _, err := api.UpdateMessageContext(t.Context(), "C0TEST01", s.Messages("C0TEST01")[0].TS, slack.MsgOptionText("y", false))
	require.EqualError(t, err, "cant_update_message")

	s.FailNextRaw(http.StatusBadGateway, "9", `{"echo":"x"}`, 0)
	require.ErrorAs(t, post(), &sc)
	require.Equal(t, http.StatusBadGateway, sc.Code)

	require.NoError(t, post())
	require.Len(t, s.Messages("C0TEST01"), 2, "failed requests have no effect")
	reqs := s.RequestsFor("chat.postMessage")
	require.Equal(t, "ratelimited", reqs[0].Error)
	require.Equal(t, http.StatusTooManyRequests, reqs[0].Status)
}

func TestSlackServerDownUpLatencyLose(t *testing.T) {
	s := NewSlackServer(t)
	api := newSlackClient(s, SlackTestToken)
	post := func(ctx context.Context) error {
		_, _, err := api.PostMessageContext(ctx, "C0TEST01", slack.MsgOptionText("x", false))
		return err
	}

	s.Down()
	require.Error(t, post(t.Context()))
	s.Up()
	require.NoError(t, post(t.Context()))

	s.SetLatency(time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, post(ctx), context.DeadlineExceeded)
	s.SetLatency(0)

	s.LoseNext("chat.postMessage", 1)
	err := post(t.Context())
	require.Error(t, err)
	require.NotErrorAs(t, err, new(slack.SlackErrorResponse))
	require.Len(t, s.Messages("C0TEST01"), 2, "the lost post happened")
	require.True(t, s.Requests()[len(s.Requests())-1].Lost)
}

func TestSlackServerWebhook(t *testing.T) {
	s := NewSlackServer(t)
	msg := &slack.WebhookMessage{Text: "hi", Blocks: &slack.Blocks{BlockSet: []slack.Block{section("hello")}}}
	require.NoError(t, slack.PostWebhookCustomHTTPContext(t.Context(), s.WebhookURL(), http.DefaultClient, msg))
	got := s.Messages(SlackWebhookChannel)
	require.Len(t, got, 1)
	require.Equal(t, "hi", got[0].Text)
	req := s.RequestsFor("webhook")[0]
	require.NotContains(t, req.Path, strings.TrimPrefix(s.WebhookURL(), s.URL), "the secret path is not recorded")
	require.Equal(t, "hi", req.Param("text"))

	var sc slack.StatusCodeError
	err := slack.PostWebhookCustomHTTPContext(t.Context(), s.URL+"/services/T0/B0/wrong", http.DefaultClient, msg)
	require.ErrorAs(t, err, &sc)
	require.Equal(t, http.StatusNotFound, sc.Code)

	s.FailNextOn("webhook", 1, http.StatusTooManyRequests, "rate_limited", 3*time.Second)
	var rl *slack.RateLimitedError
	require.ErrorAs(t, slack.PostWebhookCustomHTTPContext(t.Context(), s.WebhookURL(), http.DefaultClient, msg), &rl)
	require.Equal(t, 3*time.Second, rl.RetryAfter)

	err = slack.PostWebhookCustomHTTPContext(t.Context(), s.WebhookURL(), http.DefaultClient,
		&slack.WebhookMessage{Text: "x", Blocks: &slack.Blocks{BlockSet: dividers(51)}})
	require.ErrorAs(t, err, &sc)
	require.Equal(t, http.StatusBadRequest, sc.Code)
	require.Equal(t, "invalid_blocks", s.RequestsFor("webhook")[3].Error)
}

func dividers(n int) []slack.Block {
	bs := make([]slack.Block, n)
	for i := range bs {
		bs[i] = slack.NewDividerBlock()
	}
	return bs
}

func TestSlackCheckBlocks(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	mk := func(blocks ...slack.Block) []byte {
		b, err := json.Marshal(blocks)
		require.NoError(t, err)
		return b
	}
	header := func(s string) slack.Block {
		return slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, s, true, false))
	}
	fields := func(n, size int) slack.Block {
		var fs []*slack.TextBlockObject
		for range n {
			fs = append(fs, slack.NewTextBlockObject(slack.MarkdownType, long(size), false, false))
		}
		return slack.NewSectionBlock(nil, fs, nil)
	}
	many := func(n int) []slack.Block {
		var bs []slack.Block
		for range n {
			bs = append(bs, section(long(2900)))
		}
		return bs
	}
	for _, tc := range []struct {
		name   string
		blocks []byte
		want   string // error prefix; "" for valid
	}{
		{"valid", mk(header("h"), section("s"), fields(9, 1000), fields(1, 2000), slack.NewDividerBlock(),
			slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "c", false, false))), ""},
		{"11600 characters", mk(many(4)...), ""},
		{"50 blocks", mk(dividers(50)...), ""},
		{"51 blocks", mk(dividers(51)...), "invalid_blocks: 51 blocks"},
		{"header too long", mk(header(long(151))), "invalid_blocks: block 0: header text has 151 characters"},
		{"header mrkdwn", mk(slack.NewHeaderBlock(slack.NewTextBlockObject(slack.MarkdownType, "h", false, false))), "invalid_blocks: block 0: header text has type"},
		{"section too long", mk(section(long(3001))), "invalid_blocks: block 0: section text has 3001 characters"},
		{"empty section", mk(section("")), "invalid_blocks: block 0: section text is empty"},
		{"11 fields", mk(fields(11, 1)), "invalid_blocks: block 0: 11 fields"},
		{"field too long", mk(fields(1, 2001)), "invalid_blocks: block 0: field 0 has 2001 characters"},
		{"total too long", mk(many(5)...), "msg_blocks_too_long: 14500 characters"},
		{"not an array", []byte(`{}`), "invalid_blocks: not a JSON array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := SlackCheckBlocks(tc.blocks)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tc.want), "got %q, want prefix %q", err, tc.want)
		})
	}
}
