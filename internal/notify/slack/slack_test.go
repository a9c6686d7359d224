package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const testChannel = "C0DRIFTW01"

func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := notifytest.NewFiles(t).Write("secret", content+"\n")
	return p
}

// newBot returns a bot notifier talking to srv with a canary token, and
// what it logged so far.
func newBot(t *testing.T, srv *notifytest.SlackServer, timeout time.Duration) (*Notifier, string, func() string) {
	t.Helper()
	token := "xoxb-" + notifytest.Canary("token")
	srv.SetToken(token)
	logger, logs := notifytest.CaptureLogger()
	n, err := New(Config{
		Name: "slack-oncall", Mode: ModeBot, TokenFile: writeSecret(t, token), Channel: testChannel,
		APIURL:  strings.TrimSuffix(srv.APIURL(), "/"), // New adds the "/" slack-go needs
		Timeout: timeout,
	}, &http.Client{}, logger)
	require.NoError(t, err)
	return n, token, logs
}

func newHook(t *testing.T, srv *notifytest.SlackServer, url string) (*Notifier, func() string) {
	t.Helper()
	logger, logs := notifytest.CaptureLogger()
	n, err := New(Config{Name: "slack-hook", Mode: ModeWebhook, WebhookURLFile: writeSecret(t, url)}, nil, logger)
	require.NoError(t, err)
	return n, logs
}

// store plays the outbox's notifier state: what saveState and delivery
// stored, and the requests that had been made when saveState ran.
type store struct {
	t       *testing.T
	srv     *notifytest.SlackServer
	state   []byte
	saves   []parentState
	savedAt [][]string // srv.Methods() at each save
	fail    error      // returned by the next save
}

func (s *store) save(b []byte) error {
	var st parentState
	require.NoError(s.t, json.Unmarshal(b, &st))
	s.savedAt = append(s.savedAt, s.srv.Methods())
	if err := s.fail; err != nil {
		s.fail = nil
		return err
	}
	s.state = b
	s.saves = append(s.saves, st)
	return nil
}

// deliver runs one delivery as the outbox does: on success the returned
// state replaces the stored one.
func (s *store) deliver(n *Notifier, m notify.Message) error {
	s.t.Helper()
	s.srv.ResetRequests()
	s.saves, s.savedAt = nil, nil
	got, err := n.Notify(s.t.Context(), m, s.state, s.save)
	if err == nil {
		s.state = got
	}
	return err
}

func (s *store) parent() parentState {
	st, err := decodeState(s.state)
	require.NoError(s.t, err)
	require.NotNil(s.t, st)
	return *st
}

func lifecycle() []notify.Message {
	open := testMessage(notify.EventOpen, "msg-open", sg)
	update := testMessage(notify.EventUpdate, "msg-update", sg, bucket)
	update.At = since.Add(4 * time.Hour)
	update.Delta = &notify.Delta{Added: []drift.Finding{bucket}}
	renotify := testMessage(notify.EventRenotify, "msg-renotify", sg, bucket)
	renotify.At = since.Add(28 * time.Hour)
	resolve := testMessage(notify.EventResolve, "msg-resolve")
	resolve.At = since.Add(30 * time.Hour)
	return []notify.Message{open, update, renotify, resolve}
}

func TestBotLifecycle(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, token, logs := newBot(t, srv, 0)
	st := &store{t: t, srv: srv}
	msgs := lifecycle()

	// Open: look for an earlier parent, post one, save its ts at once.
	require.NoError(t, st.deliver(n, msgs[0]))
	require.Equal(t, []string{"conversations.history", "chat.postMessage"}, srv.Methods())
	reqs := srv.Requests()
	require.Equal(t, testChannel, reqs[0].Param("channel"))
	require.Equal(t, "1", reqs[0].Param("include_all_metadata"))
	require.Equal(t, fmt.Sprintf("%d.000000", since.Add(3*time.Hour-5*time.Minute).Unix()), reqs[0].Param("oldest"),
		"the message's time minus the margin")
	post := reqs[1]
	require.Equal(t, testChannel, post.Param("channel"))
	require.Empty(t, post.Param("thread_ts"))
	require.Equal(t, &notifytest.SlackMetadata{EventType: "driftwatch_incident", EventPayload: map[string]any{
		"incident_key": "drift-prod-network", "message_id": "msg-open",
	}}, post.Metadata())
	require.Equal(t, "[critical] Drift in prod-network: 1 drifted", post.Param("text"))
	require.Equal(t, "header", post.Blocks()[0]["type"])
	require.Equal(t, "false", post.Param("unfurl_links"))

	parents := srv.Messages(testChannel)
	require.Len(t, parents, 1)
	parentTS := parents[0].TS
	require.Equal(t, []parentState{{Channel: testChannel, TS: parentTS, ParentMessageID: "msg-open", Since: since.Unix()}}, st.saves)
	require.Equal(t, [][]string{{"conversations.history", "chat.postMessage"}}, st.savedAt, "saved right after the post")
	require.Equal(t, parentState{Channel: testChannel, TS: parentTS, ParentMessageID: "msg-open", Since: since.Unix()}, st.parent())

	// Update, renotify, resolve: the parent in place, then a thread reply.
	for i, m := range msgs[1:] {
		require.NoError(t, st.deliver(n, m), m.Event)
		require.Equal(t, []string{"chat.update", "chat.postMessage"}, srv.Methods(), m.Event)
		reqs := srv.Requests()
		require.Equal(t, testChannel, reqs[0].Param("channel"))
		require.Equal(t, parentTS, reqs[0].Param("ts"), "chat.update of the same parent")
		require.Equal(t, "msg-open", reqs[0].Metadata().EventPayload["message_id"], "the parent keeps its metadata")
		reply := reqs[1]
		require.Equal(t, parentTS, reply.Param("thread_ts"))
		require.Equal(t, &notifytest.SlackMetadata{EventType: "driftwatch_incident_update", EventPayload: map[string]any{
			"incident_key": "drift-prod-network", "message_id": m.ID,
		}}, reply.Metadata())
		require.Equal(t, m.Event == notify.EventRenotify, reply.Param("reply_broadcast") == "true", "only a renotify is broadcast")
		// The reply is announced as pending before it is posted.
		require.Equal(t, [][]string{{"chat.update"}}, st.savedAt, m.Event)
		require.Equal(t, m.ID, st.saves[0].PendingReply)
		require.Len(t, srv.Replies(testChannel, parentTS), i+1)
		require.Empty(t, st.parent().PendingReply)
	}

	parents = srv.Messages(testChannel)
	require.Len(t, parents, 1, "one parent for the whole incident")
	require.Equal(t, 3, parents[0].Edits)
	require.Contains(t, string(parents[0].Blocks), ":white_check_mark: Resolved: Drift in prod-network")
	require.Contains(t, string(parents[0].Blocks), `Resolved after 1d 6h`)
	require.Equal(t, "Resolved: Drift in prod-network after 1d 6h", parents[0].Text)
	replies := srv.Replies(testChannel, parentTS)
	require.Equal(t, []string{"Findings changed: 1 added", "Still open after 1d 4h: Drift in prod-network", "Resolved after 1d 6h"},
		[]string{replies[0].Text, replies[1].Text, replies[2].Text})
	require.True(t, replies[1].Broadcast)
	require.True(t, st.parent().Resolved)
	require.NotContains(t, logs(), token)
}

func TestBotOpenRetriedAfterCrashBeforeSaveState(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _, _ := newBot(t, srv, 0)
	st := &store{t: t, srv: srv, fail: errors.New("database is locked")}
	open := lifecycle()[0]

	err := st.deliver(n, open)
	require.EqualError(t, err, "save state: database is locked")
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
	require.Nil(t, st.state, "nothing was stored: the process 'crashed'")
	first := srv.Messages(testChannel)
	require.Len(t, first, 1)

	require.NoError(t, st.deliver(n, open))
	require.Equal(t, []string{"conversations.history"}, srv.Methods(), "found, not posted again")
	require.Len(t, srv.Messages(testChannel), 1)
	require.Equal(t, first[0].TS, st.parent().TS)

	// The next message threads under that parent.
	require.NoError(t, st.deliver(n, lifecycle()[1]))
	require.Equal(t, []string{"chat.update", "chat.postMessage"}, srv.Methods())
	require.Len(t, srv.Replies(testChannel, first[0].TS), 1)
}

func TestBotOpenRetriedAfterLostResponse(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _, _ := newBot(t, srv, 0)
	st := &store{t: t, srv: srv}
	open := lifecycle()[0]
	// Noise in the channel since, so the lookup has to page.
	for range 150 {
		srv.AddMessage(notifytest.SlackMessage{Channel: testChannel, Text: "someone else"})
	}

	srv.LoseNext("chat.postMessage", 1)
	err := st.deliver(n, open)
	require.Error(t, err)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry, "a lost response is retryable: %v", err)
	require.Empty(t, st.saves)
	for range 150 {
		srv.AddMessage(notifytest.SlackMessage{Channel: testChannel, Text: "someone else"})
	}

	require.NoError(t, st.deliver(n, open))
	require.Equal(t, []string{"conversations.history", "conversations.history"}, srv.Methods())
	require.NotEmpty(t, srv.Requests()[1].Param("cursor"))
	var ours []string
	for _, m := range srv.Messages(testChannel) {
		if m.Metadata != nil {
			ours = append(ours, m.TS)
		}
	}
	require.Len(t, ours, 1)
	require.Equal(t, ours[0], st.parent().TS)
}

func TestBotOpenRetriedAfterDelivery(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _, _ := newBot(t, srv, 0)
	st := &store{t: t, srv: srv}
	open := lifecycle()[0]
	require.NoError(t, st.deliver(n, open))
	saved := st.state
	// saveState stored the parent, then the outbox crashed before
	// recording the delivery: the retry has the state.
	require.NoError(t, st.deliver(n, open))
	require.Empty(t, srv.Methods())
	require.Equal(t, saved, st.state)
}

func TestBotReplyRetriedAfterLostResponse(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _, _ := newBot(t, srv, 0)
	st := &store{t: t, srv: srv}
	msgs := lifecycle()
	require.NoError(t, st.deliver(n, msgs[0]))
	parentTS := st.parent().TS

	srv.LoseNext("chat.postMessage", 1)
	require.Error(t, st.deliver(n, msgs[1]))
	require.Equal(t, "msg-update", st.parent().PendingReply, "the write-ahead survived")
	require.Len(t, srv.Replies(testChannel, parentTS), 1, "the reply was posted")

	require.NoError(t, st.deliver(n, msgs[1]))
	require.Equal(t, []string{"chat.update", "conversations.replies"}, srv.Methods())
	require.Equal(t, parentTS, srv.Requests()[1].Param("ts"))
	require.Equal(t, "1", srv.Requests()[1].Param("include_all_metadata"))
	require.Len(t, srv.Replies(testChannel, parentTS), 1, "not posted twice")
	require.Empty(t, st.parent().PendingReply)

	// A reply that failed before reaching Slack is looked for, then posted.
	srv.FailNextOn("chat.postMessage", 1, http.StatusServiceUnavailable, "", 0)
	require.Error(t, st.deliver(n, msgs[2]))
	require.NoError(t, st.deliver(n, msgs[2]))
	require.Equal(t, []string{"chat.update", "conversations.replies", "chat.postMessage"}, srv.Methods())
	require.Len(t, srv.Replies(testChannel, parentTS), 2)
}

func TestBotWithoutUsableParent(t *testing.T) {
	msgs := lifecycle()
	t.Run("no state: post a parent, then the reply", func(t *testing.T) {
		srv := notifytest.NewSlackServer(t)
		n, _, _ := newBot(t, srv, 0)
		st := &store{t: t, srv: srv}
		require.NoError(t, st.deliver(n, msgs[1]))
		require.Equal(t, []string{"conversations.history", "chat.postMessage", "chat.postMessage"}, srv.Methods())
		require.Equal(t, [][]string{{"conversations.history", "chat.postMessage"}}, st.savedAt)
		require.Equal(t, "msg-update", st.saves[0].PendingReply)
		parents := srv.Messages(testChannel)
		require.Len(t, parents, 1)
		require.Equal(t, "msg-update", parents[0].Metadata.EventPayload["message_id"])
		require.Len(t, srv.Replies(testChannel, parents[0].TS), 1)
		require.Equal(t, parents[0].TS, st.parent().TS)
		require.Empty(t, st.parent().PendingReply)
	})
	t.Run("parent deleted in Slack", func(t *testing.T) {
		srv := notifytest.NewSlackServer(t)
		n, _, logs := newBot(t, srv, 0)
		st := &store{t: t, srv: srv}
		require.NoError(t, st.deliver(n, msgs[0]))
		old := st.parent().TS
		srv.FailNextOn("chat.update", 1, http.StatusOK, "message_not_found", 0)
		require.NoError(t, st.deliver(n, msgs[1]))
		require.Equal(t, []string{"chat.update", "conversations.history", "chat.postMessage", "chat.postMessage"}, srv.Methods())
		require.NotEqual(t, old, st.parent().TS)
		require.Len(t, srv.Replies(testChannel, st.parent().TS), 1)
		require.Contains(t, logs(), "parent message is gone")
	})
	t.Run("next incident of the same key", func(t *testing.T) {
		srv := notifytest.NewSlackServer(t)
		n, _, _ := newBot(t, srv, 0)
		st := &store{t: t, srv: srv}
		for _, m := range msgs {
			require.NoError(t, st.deliver(n, m))
		}
		first := st.parent().TS
		again := testMessage(notify.EventOpen, "msg-open-2", sg)
		again.Incident.Since = since.Add(48 * time.Hour)
		again.At = again.Incident.Since
		require.NoError(t, st.deliver(n, again))
		require.Equal(t, []string{"conversations.history", "chat.postMessage"}, srv.Methods())
		require.NotEqual(t, first, st.parent().TS)
		require.Len(t, srv.Messages(testChannel), 2)
		require.False(t, st.parent().Resolved)

		// An update for the new incident with the old (resolved) state of
		// an unrecorded delivery never touches the old parent.
		st.state = parentState{Channel: testChannel, TS: first, ParentMessageID: "msg-open", Since: since.Unix(), Resolved: true}.encode()
		upd := testMessage(notify.EventUpdate, "msg-update-2", sg)
		upd.Incident.Since = again.Incident.Since
		upd.At = again.At.Add(time.Hour)
		require.NoError(t, st.deliver(n, upd))
		require.Equal(t, []string{"conversations.history", "chat.postMessage", "chat.postMessage"}, srv.Methods())
		require.Len(t, srv.Messages(testChannel), 3)
	})
	t.Run("unreadable state", func(t *testing.T) {
		srv := notifytest.NewSlackServer(t)
		n, _, logs := newBot(t, srv, 0)
		st := &store{t: t, srv: srv, state: []byte("{not json")}
		require.NoError(t, st.deliver(n, msgs[1]))
		require.Len(t, srv.Messages(testChannel), 1)
		require.Contains(t, logs(), "ignoring unreadable notifier state")
	})
	t.Run("history not readable: post without the check", func(t *testing.T) {
		srv := notifytest.NewSlackServer(t)
		n, _, logs := newBot(t, srv, 0)
		st := &store{t: t, srv: srv}
		srv.FailNextOn("conversations.history", 1, http.StatusOK, "missing_scope", 0)
		require.NoError(t, st.deliver(n, msgs[0]))
		require.Equal(t, []string{"conversations.history", "chat.postMessage"}, srv.Methods())
		require.Contains(t, logs(), "posting without the duplicate check")
	})
}

func TestBotErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail       func(*notifytest.SlackServer)
		want       string // error text, exactly
		retryable  bool
		retryAfter time.Duration
	}{
		{"429 with Retry-After", func(s *notifytest.SlackServer) { s.FailNext(1, 429, "ratelimited", 7*time.Second) },
			"chat.update of C0DRIFTW01 1.000001: rate limited, retry after 7s", true, 7 * time.Second},
		{"429 without Retry-After", func(s *notifytest.SlackServer) { s.FailNext(1, 429, "ratelimited", 0) },
			"chat.update of C0DRIFTW01 1.000001: HTTP 429", true, 0},
		{"ratelimited in a 200", func(s *notifytest.SlackServer) { s.FailNext(1, 200, "ratelimited", 0) },
			"chat.update of C0DRIFTW01 1.000001: ratelimited", true, 0},
		{"500", func(s *notifytest.SlackServer) { s.FailNext(1, 500, "", 0) },
			"chat.update of C0DRIFTW01 1.000001: HTTP 500", true, 0},
		{"503 with Retry-After", func(s *notifytest.SlackServer) { s.FailNext(1, 503, "", 3*time.Second) },
			"chat.update of C0DRIFTW01 1.000001: HTTP 503", true, 3 * time.Second},
		{"internal_error", func(s *notifytest.SlackServer) { s.FailNext(1, 200, "internal_error", 0) },
			"chat.update of C0DRIFTW01 1.000001: internal_error", true, 0},
		{"down", func(s *notifytest.SlackServer) { s.Down() },
			"chat.update of C0DRIFTW01 1.000001: *", true, 0}, // EOF or a reset: the OS decides
		{"invalid_auth", func(s *notifytest.SlackServer) { s.FailNext(1, 200, "invalid_auth", 0) },
			"chat.update of C0DRIFTW01 1.000001: invalid_auth", false, 0},
		{"wrong token", func(s *notifytest.SlackServer) { s.SetToken("xoxb-another") },
			"chat.update of C0DRIFTW01 1.000001: invalid_auth", false, 0},
		{"channel_not_found", func(s *notifytest.SlackServer) { s.FailNext(1, 200, "channel_not_found", 0) },
			"chat.update of C0DRIFTW01 1.000001: channel_not_found", false, 0},
		{"not_in_channel", func(s *notifytest.SlackServer) { s.FailNext(1, 200, "not_in_channel", 0) },
			"chat.update of C0DRIFTW01 1.000001: not_in_channel", false, 0},
		{"invalid_blocks on the reply", func(s *notifytest.SlackServer) { s.FailNextOn("chat.postMessage", 1, 200, "invalid_blocks", 0) },
			"chat.postMessage to C0DRIFTW01 thread 1.000001: invalid_blocks", false, 0},
		{"400", func(s *notifytest.SlackServer) { s.FailNext(1, 400, "", 0) },
			"chat.update of C0DRIFTW01 1.000001: HTTP 400", false, 0},
		{"not JSON", func(s *notifytest.SlackServer) { s.FailNextRaw(200, "", "<html>proxy</html>", 0) },
			"chat.update of C0DRIFTW01 1.000001: invalid character '<' looking for beginning of value", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := notifytest.NewSlackServer(t)
			n, token, logs := newBot(t, srv, 0)
			parent := srv.AddMessage(notifytest.SlackMessage{Channel: testChannel, Text: "parent"})
			state := parentState{Channel: testChannel, TS: parent, ParentMessageID: "msg-open", Since: since.Unix()}.encode()
			tc.fail(srv)
			_, err := n.Notify(t.Context(), lifecycle()[1], state, func([]byte) error { return nil })
			require.Error(t, err)
			requireErrorText(t, strings.ReplaceAll(tc.want, "1.000001", parent), err)
			retry, after := notify.IsRetryable(err)
			require.Equal(t, tc.retryable, retry, "retryable")
			require.Equal(t, tc.retryAfter, after, "retry after")
			notifytest.RequireNoSecrets(t, err, []string{token})
			notifytest.RequireNoSecretsIn(t, logs(), []string{token})
		})
	}
}

func TestBotTimeoutAndCancel(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, _, _ := newBot(t, srv, 100*time.Millisecond)
	srv.SetLatency(5 * time.Second)
	start := time.Now()
	_, err := n.Notify(t.Context(), lifecycle()[0], nil, func([]byte) error { return nil })
	require.Less(t, time.Since(start), 2*time.Second)
	require.EqualError(t, err, "conversations.history of C0DRIFTW01: no answer from slack within 100ms: context deadline exceeded")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = n.Notify(ctx, lifecycle()[0], nil, func([]byte) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	retry, _ = notify.IsRetryable(err)
	require.True(t, retry)
}

func TestBotSecretsNeverLeak(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, token, logs := newBot(t, srv, 200*time.Millisecond)
	secrets := []string{token, strings.TrimPrefix(token, "xoxb-")}
	run := func(m notify.Message, fail func()) {
		t.Helper()
		fail()
		_, err := n.Notify(t.Context(), m, nil, func([]byte) error { return nil })
		require.Error(t, err)
		notifytest.RequireNoSecrets(t, err, secrets)
	}
	open := lifecycle()[0]
	run(open, func() { srv.FailNext(1, 200, "invalid_auth: token "+token+" is not valid", 0) })
	run(open, func() { srv.FailNext(1, 200, token, 0) })
	run(open, func() { srv.FailNextRaw(200, "", `{"ok":false,"error":"invalid_auth","detail":"`+token+`"}`, 0) })
	run(open, func() { srv.FailNextRaw(401, "", `{"ok":false,"error":"`+token+`"}`, 0) })
	run(open, func() { srv.FailNextRaw(200, "", token, 0) })
	run(open, func() { srv.FailNextOn("chat.postMessage", 1, 200, "invalid_blocks "+token, 0) })
	run(open, func() {
		srv.FailNextOn("conversations.history", 1, 200, "missing_scope", 0)
		srv.FailNextOn("chat.postMessage", 1, 500, "", 0)
	})
	run(open, func() { srv.SetLatency(time.Second) })
	srv.SetLatency(0)
	srv.Down()
	run(open, func() {})
	srv.Up()
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
	require.Contains(t, logs(), "missing_scope", "the logs are captured")
}

func TestRedactor(t *testing.T) {
	r := newRedactor("xoxb-123-456-abcdef", "https://hooks.slack.com/services/T0/B0/hooksecret")
	for in, want := range map[string]string{
		"token=xoxb-123-456-abcdef&x=1":                                   "token=[redacted]&x=1",
		"Post \"https://hooks.slack.com/services/T0/B0/hooksecret\": EOF": "Post \"[redacted]\": EOF",
		"path /services/T0/B0/hooksecret":                                 "path [redacted]",
		"escaped xoxb-123-456-abcdef%0A":                                  "escaped [redacted]%0A",
		"someone else's xoxp-999-888 token":                               "someone else's [redacted] token",
		"hooks.slack.com/services/T9/B9/other":                            "hooks.slack.com/services/[redacted]",
		"nothing secret":                                                  "nothing secret",
	} {
		require.Equal(t, want, r.redact(in), in)
	}
	require.Equal(t, "invalid_auth", code("invalid_auth"))
	require.Equal(t, "invalid_auth (details omitted)", code("invalid_auth: xoxb-1"))
	require.Equal(t, "unrecognised error (details omitted)", code("<b>"))
}

func TestWebhook(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	n, logs := newHook(t, srv, srv.WebhookURL())
	state := []byte(`{"kept":true}`)
	for _, m := range lifecycle() {
		got, err := n.Notify(t.Context(), m, state, func([]byte) error {
			t.Fatal("webhook mode has no state to save")
			return nil
		})
		require.NoError(t, err, m.Event)
		require.Equal(t, state, got, "state passes through")
	}
	require.Equal(t, []string{"webhook", "webhook", "webhook", "webhook"}, srv.Methods())
	first := srv.Requests()[0]
	require.Equal(t, "application/json", first.ContentType)
	require.Equal(t, "[critical] Drift in prod-network: 1 drifted", first.Param("text"))
	require.Equal(t, "header", first.Blocks()[0]["type"])
	require.Equal(t, false, first.JSON["unfurl_links"])
	got := srv.Messages(notifytest.SlackWebhookChannel)
	require.Len(t, got, 4)
	require.Contains(t, string(got[1].Blocks), "(changed)")
	require.Contains(t, string(got[1].Blocks), "*Added (1)*")
	require.Contains(t, string(got[2].Blocks), "Still open: Drift in prod-network")
	require.Equal(t, "Resolved: Drift in prod-network after 1d 6h", got[3].Text)
	require.Empty(t, logs())
}

func TestWebhookErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail       func(*notifytest.SlackServer)
		url        func(*notifytest.SlackServer) string
		want       string
		retryable  bool
		retryAfter time.Duration
	}{
		{name: "429", fail: func(s *notifytest.SlackServer) { s.FailNext(1, 429, "rate_limited", 5*time.Second) },
			want: "webhook: HTTP 429: rate_limited", retryable: true, retryAfter: 5 * time.Second},
		{name: "500", fail: func(s *notifytest.SlackServer) { s.FailNext(1, 500, "rollup_error", 0) },
			want: "webhook: HTTP 500: rollup_error", retryable: true},
		{name: "invalid_blocks", fail: func(s *notifytest.SlackServer) { s.FailNext(1, 400, "invalid_blocks", 0) },
			want: "webhook: HTTP 400: invalid_blocks"},
		{name: "channel archived", fail: func(s *notifytest.SlackServer) { s.FailNext(1, 410, "channel_is_archived", 0) },
			want: "webhook: HTTP 410: channel_is_archived"},
		{name: "unknown hook", url: func(s *notifytest.SlackServer) string { return s.URL + "/services/T0/B0/revoked" },
			want: "webhook: HTTP 404: no_service"},
		{name: "body echoes the URL", fail: func(s *notifytest.SlackServer) { s.FailNextRaw(400, "", "bad request to "+s.WebhookURL(), 0) },
			want: "webhook: HTTP 400"},
		{name: "down", fail: func(s *notifytest.SlackServer) { s.Down() },
			want: "webhook: *", retryable: true},
		{name: "refused", url: func(s *notifytest.SlackServer) string { return "http://127.0.0.1:1/services/T0/B0/refusedsecret" },
			want: "webhook: dial tcp 127.0.0.1:1: *", retryable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := notifytest.NewSlackServer(t)
			url := srv.WebhookURL()
			if tc.url != nil {
				url = tc.url(srv)
			}
			n, logs := newHook(t, srv, url)
			if tc.fail != nil {
				tc.fail(srv)
			}
			_, err := n.Notify(t.Context(), lifecycle()[0], nil, nil)
			require.Error(t, err)
			requireErrorText(t, tc.want, err)
			retry, after := notify.IsRetryable(err)
			require.Equal(t, tc.retryable, retry)
			require.Equal(t, tc.retryAfter, after)
			secrets := []string{url, webhookPath(t, url), url[strings.LastIndex(url, "/")+1:]}
			notifytest.RequireNoSecrets(t, err, secrets)
			notifytest.RequireNoSecretsIn(t, logs(), secrets)
		})
	}
}

// requireErrorText compares err's text with want, or with its prefix when
// want ends in "*".
func requireErrorText(t *testing.T, want string, err error) {
	t.Helper()
	if prefix, ok := strings.CutSuffix(want, "*"); ok {
		require.True(t, strings.HasPrefix(err.Error(), prefix), "got %q, want prefix %q", err, prefix)
		require.Greater(t, len(err.Error()), len(prefix), "a reason follows")
		return
	}
	require.EqualError(t, err, want)
}

// slackControl adapts SlackServer to notifytest.ServerControl.
type slackControl struct {
	srv     *notifytest.SlackServer
	secrets []string
}

func (c slackControl) FailNext(f notifytest.Failure) {
	c.srv.FailNextRaw(f.Status, f.RetryAfter, f.Body, f.Delay)
}
func (c slackControl) Down()             { c.srv.Down() }
func (c slackControl) Up()               { c.srv.Up() }
func (c slackControl) Secrets() []string { return c.secrets }

func TestConformance(t *testing.T) {
	t.Run("bot", func(t *testing.T) {
		notifytest.Conformance(t, func(t *testing.T) (notify.Notifier, notifytest.ServerControl) {
			srv := notifytest.NewSlackServer(t)
			n, token, _ := newBot(t, srv, 0)
			return n, slackControl{srv: srv, secrets: []string{token}}
		})
	})
	t.Run("webhook", func(t *testing.T) {
		notifytest.Conformance(t, func(t *testing.T) (notify.Notifier, notifytest.ServerControl) {
			srv := notifytest.NewSlackServer(t)
			n, _ := newHook(t, srv, srv.WebhookURL())
			u := srv.WebhookURL()
			return n, slackControl{srv: srv, secrets: []string{u, webhookPath(t, u)}}
		})
	})
}

// webhookPath is the secret part of a webhook URL: from "/services/" on.
func webhookPath(t *testing.T, u string) string {
	t.Helper()
	i := strings.Index(u, "/services/")
	require.GreaterOrEqual(t, i, 0, "%s is not a webhook URL", u)
	return u[i:]
}
