package slackinteract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/store"
)

const (
	approver = "U0APPROVE1"
	channel  = "C0DRIFTW01"
	target   = "https://dw.example/api/v1/slack/interactions"
)

var (
	now         = time.Date(2026, 11, 26, 1, 2, 3, 0, time.UTC)
	errMismatch = errors.New("change_set_hash does not match the remediation's change set")
)

// originalBlocks is a clicked awaiting-approval message: what happened,
// the buttons, the context line.
const originalBlocks = `[{"type":"section","block_id":"a1","text":{"type":"mrkdwn","text":"*Remediation awaiting approval* · remediation ` + "`rem-1`" + `"}},` +
	`{"type":"actions","block_id":"driftwatch_remediation_actions","elements":[{"type":"button","action_id":"driftwatch_approve","text":{"type":"plain_text","text":"Approve"},"value":"v"}]},` +
	`{"type":"context","block_id":"c1","elements":[{"type":"mrkdwn","text":"driftwatch"}]}]`

type actorKey struct{}

func withActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// decider records the decisions asked of it, with their actor, and
// answers err.
type decider struct {
	mu    sync.Mutex
	calls []string // "approve rem-1 hash-1 by slack:U…"
	err   error
}

func (d *decider) record(ctx context.Context, s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, _ := ctx.Value(actorKey{}).(string)
	d.calls = append(d.calls, s+" by "+a)
	return d.err
}

func (d *decider) Approve(ctx context.Context, id, hash string) (store.Remediation, error) {
	return store.Remediation{ID: id}, d.record(ctx, "approve "+id+" "+hash)
}

func (d *decider) Reject(ctx context.Context, id string) (store.Remediation, error) {
	return store.Remediation{ID: id}, d.record(ctx, "reject "+id)
}

func (d *decider) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

type fixture struct {
	h      *Handler
	dec    *decider
	recv   *notifytest.SlackResponseServer
	signer notifytest.SlackSigner
	logs   func() string
	secret string
}

// newFixture is a Handler answering notifier slack-oncall (channel
// C0DRIFTW01, one approver) and slack-other (another app), whose
// response_urls go to a local receiver.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dec: &decider{}, recv: notifytest.NewSlackResponseServer(t), secret: notifytest.Canary("signing")}
	f.signer = notifytest.SlackSigner{Secret: f.secret}
	logger, logs := notifytest.CaptureLogger()
	f.logs = logs
	h, err := New(Options{
		Notifiers: func() ([]Notifier, error) {
			return []Notifier{
				{Name: "slack-oncall", SigningSecret: f.secret, Approvers: []string{"U0OTHER01", approver}, Channel: channel, ResponseOrigin: f.recv.URL},
				{Name: "slack-other", SigningSecret: "other-app-secret", Approvers: []string{approver}, ResponseOrigin: f.recv.URL},
			}, nil
		},
		Decider: f.dec, WithActor: withActor, HashMismatchErr: errMismatch,
		Logger: logger, Now: func() time.Time { return now },
	})
	require.NoError(t, err)
	f.h = h
	return f
}

func (f *fixture) payload(action string) notifytest.SlackActionPayload {
	return notifytest.SlackActionPayload{
		UserID: approver, UserName: "alice", Channel: channel, MessageTS: "1793700000.000100",
		ActionID: action, ResponseURL: f.recv.ResponseURL("B0123"),
		Value:  slack.ActionValue{Notifier: "slack-oncall", Remediation: "rem-1", Hash: "hash-1"}.String(),
		Blocks: originalBlocks,
	}
}

// serve sends a request signed by signer at sentAt and returns the status.
func (f *fixture) serve(t *testing.T, signer notifytest.SlackSigner, p notifytest.SlackActionPayload, sentAt time.Time) int {
	t.Helper()
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, signer.Request(target, p.Body(), sentAt))
	return rec.Code
}

// requireClean checks that nothing logged or answered holds the signing
// secret or the response_url (a credential).
func (f *fixture) requireClean(t *testing.T) {
	t.Helper()
	notifytest.RequireNoSecretsIn(t, f.logs(), []string{f.secret, "/actions/T0DRIFTW0/", "originalBlocks", "hash-1\""})
	for _, r := range f.recv.Responses() {
		notifytest.RequireNoSecretsIn(t, r.Text+string(r.Blocks), []string{f.secret})
	}
	require.Empty(t, f.recv.Errors(), "every reply is valid")
}

// blocks decodes a reply's blocks as JSON strings, one a block.
func blocks(t *testing.T, r notifytest.SlackResponse) []string {
	t.Helper()
	var bs []json.RawMessage
	require.NoError(t, json.Unmarshal(r.Blocks, &bs))
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// TestApproveAndReject: an approver's click approves (with the button's
// hash) or rejects through the Decider, recorded as the Slack user; the
// message is replaced, buttons gone, saying who decided and when.
func TestApproveAndReject(t *testing.T) {
	for _, tc := range []struct {
		action   string
		wantCall string
		wantText string
		wantLine string
	}{
		{slack.ActionApprove, "approve rem-1 hash-1 by slack:U0APPROVE1 (alice)", "Approved by <@U0APPROVE1> at 2026-11-26 01:02 UTC",
			":white_check_mark: *Approved* by <@U0APPROVE1> at <!date^1795654923^{date_short_pretty} {time}|2026-11-26 01:02 UTC>."},
		{slack.ActionReject, "reject rem-1 by slack:U0APPROVE1 (alice)", "Rejected by <@U0APPROVE1> at 2026-11-26 01:02 UTC",
			":no_entry_sign: *Rejected* by <@U0APPROVE1> at <!date^1795654923^{date_short_pretty} {time}|2026-11-26 01:02 UTC>."},
	} {
		t.Run(tc.action, func(t *testing.T) {
			f := newFixture(t)
			require.Equal(t, http.StatusOK, f.serve(t, f.signer, f.payload(tc.action), now.Add(-10*time.Second)))
			require.Equal(t, []string{tc.wantCall}, f.dec.Calls())
			got := f.recv.Responses()
			require.Len(t, got, 1)
			require.Equal(t, "/actions/T0DRIFTW0/B0123/hook", got[0].Path)
			require.Equal(t, "application/json", got[0].ContentType)
			require.True(t, got[0].ReplaceOriginal)
			require.Empty(t, got[0].ResponseType)
			require.Equal(t, tc.wantText, got[0].Text)
			line, _ := json.Marshal(map[string]any{"type": "section", "block_id": "driftwatch_decision", "text": map[string]any{"type": "mrkdwn", "text": tc.wantLine}})
			bs := blocks(t, got[0])
			require.Len(t, bs, 3, "the buttons are gone")
			require.JSONEq(t, `{"type":"section","block_id":"a1","text":{"type":"mrkdwn","text":"*Remediation awaiting approval* · remediation `+"`rem-1`"+`"}}`, bs[0])
			require.JSONEq(t, `{"type":"context","block_id":"c1","elements":[{"type":"mrkdwn","text":"driftwatch"}]}`, bs[1])
			require.JSONEq(t, string(line), bs[2])
			f.requireClean(t)
		})
	}
}

// TestDecisionRefusedShown: when the remediation cannot be decided
// (expired, already decided, another change set, gone) the message is
// replaced, buttons gone, with the reason; an internal error leaves the
// message and tells only the clicker.
func TestDecisionRefusedShown(t *testing.T) {
	for _, tc := range []struct {
		name, action string
		err          error
		wantLine     string // "": ephemeral
		wantText     string
	}{
		{"expired", slack.ActionApprove, fmt.Errorf("remediation %q: %w: it expired at 2026-11-26T01:00:00Z", "rem-1", store.ErrConflict),
			`:warning: <@U0APPROVE1> could not approve this remediation: remediation "rem-1": conflict: it expired at 2026-11-26T01:00:00Z`,
			`<@U0APPROVE1> could not approve: remediation "rem-1": conflict: it expired at 2026-11-26T01:00:00Z`},
		{"already decided", slack.ActionReject, fmt.Errorf("remediation %q: %w: it is applied", "rem-1", store.ErrConflict),
			`:warning: <@U0APPROVE1> could not reject this remediation: remediation "rem-1": conflict: it is applied`,
			`<@U0APPROVE1> could not reject: remediation "rem-1": conflict: it is applied`},
		{"hash mismatch", slack.ActionApprove, errMismatch,
			`:warning: <@U0APPROVE1> could not approve this remediation: the change set is no longer the one this message showed`,
			`<@U0APPROVE1> could not approve: the change set is no longer the one this message showed`},
		{"not found", slack.ActionApprove, fmt.Errorf("remediation %q: %w", "rem-1", store.ErrNotFound),
			`:warning: <@U0APPROVE1> could not approve this remediation: no such remediation`,
			`<@U0APPROVE1> could not approve: no such remediation`},
		{"internal", slack.ActionApprove, errors.New("database is locked"), "",
			"driftwatch could not approve remediation rem-1 (internal error, logged); try again, or use the driftwatch CLI."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.dec.err = tc.err
			require.Equal(t, http.StatusOK, f.serve(t, f.signer, f.payload(tc.action), now))
			require.Len(t, f.dec.Calls(), 1)
			got := f.recv.Responses()
			require.Len(t, got, 1)
			require.Equal(t, tc.wantText, got[0].Text)
			if tc.wantLine == "" {
				require.False(t, got[0].ReplaceOriginal)
				require.Equal(t, "ephemeral", got[0].ResponseType)
				require.Empty(t, got[0].Blocks)
				require.Contains(t, f.logs(), "database is locked")
				return
			}
			require.True(t, got[0].ReplaceOriginal)
			bs := blocks(t, got[0])
			require.Len(t, bs, 3, "the buttons are gone")
			var last struct{ Text struct{ Text string } }
			require.NoError(t, json.Unmarshal([]byte(bs[2]), &last))
			require.Equal(t, tc.wantLine, last.Text.Text)
			require.Contains(t, f.logs(), "level=WARN msg=\"slack interaction: decision refused\"")
			f.requireClean(t)
		})
	}
}

// TestForgedRequestsRefused: a request without a valid, fresh, unseen
// signature of a configured notifier decides nothing, sends nothing, is
// answered 401 (413 for an oversized body) and logged at warn with the
// reason, never with the secret or the body.
func TestForgedRequestsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    func(f *fixture) *http.Request
		status int
		reason string
	}{
		{"wrong secret", func(f *fixture) *http.Request {
			return notifytest.SlackSigner{Secret: "not-the-secret"}.Request(target, f.payload(slack.ActionApprove).Body(), now)
		}, http.StatusUnauthorized, "bad signature"},
		{"tampered body", func(f *fixture) *http.Request {
			p := f.payload(slack.ActionApprove)
			r := f.signer.Request(target, p.Body(), now)
			p.UserID = "U0ATTACKER"
			r2 := f.signer.Request(target, p.Body(), now)
			r2.Header.Set("X-Slack-Signature", r.Header.Get("X-Slack-Signature"))
			return r2
		}, http.StatusUnauthorized, "bad signature"},
		{"timestamp changed", func(f *fixture) *http.Request {
			r := f.signer.Request(target, f.payload(slack.ActionApprove).Body(), now.Add(-time.Minute))
			r.Header.Set("X-Slack-Request-Timestamp", fmt.Sprint(now.Unix()))
			return r
		}, http.StatusUnauthorized, "bad signature"},
		{"no signature", func(f *fixture) *http.Request {
			r := f.signer.Request(target, f.payload(slack.ActionApprove).Body(), now)
			r.Header.Del("X-Slack-Signature")
			return r
		}, http.StatusUnauthorized, "missing signature headers"},
		{"no timestamp", func(f *fixture) *http.Request {
			r := f.signer.Request(target, f.payload(slack.ActionApprove).Body(), now)
			r.Header.Del("X-Slack-Request-Timestamp")
			return r
		}, http.StatusUnauthorized, "missing signature headers"},
		{"malformed timestamp", func(f *fixture) *http.Request {
			r := f.signer.Request(target, f.payload(slack.ActionApprove).Body(), now)
			r.Header.Set("X-Slack-Request-Timestamp", "yesterday")
			return r
		}, http.StatusUnauthorized, "malformed timestamp"},
		{"stale", func(f *fixture) *http.Request {
			return f.signer.Request(target, f.payload(slack.ActionApprove).Body(), now.Add(-Window-time.Second))
		}, http.StatusUnauthorized, "stale timestamp"},
		{"from the future", func(f *fixture) *http.Request {
			return f.signer.Request(target, f.payload(slack.ActionApprove).Body(), now.Add(Window+time.Second))
		}, http.StatusUnauthorized, "stale timestamp"},
		{"another notifier's secret", func(f *fixture) *http.Request {
			return notifytest.SlackSigner{Secret: "other-app-secret"}.Request(target, f.payload(slack.ActionApprove).Body(), now)
		}, http.StatusUnauthorized, "signed with another notifier's signing secret"},
		{"body too large", func(f *fixture) *http.Request {
			p := f.payload(slack.ActionApprove)
			p.Blocks = `[{"type":"section","text":{"type":"mrkdwn","text":"` + strings.Repeat("x", MaxBody) + `"}}]`
			return f.signer.Request(target, p.Body(), now)
		}, http.StatusRequestEntityTooLarge, "body too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, tc.req(f))
			require.Equal(t, tc.status, rec.Code)
			require.Empty(t, f.dec.Calls(), "nothing decided")
			require.Empty(t, f.recv.Responses(), "nothing sent")
			require.Contains(t, f.logs(), `level=WARN msg="slack interaction refused" remote_addr=192.0.2.1:1234 `)
			require.Contains(t, f.logs(), `reason="`+tc.reason)
			notifytest.RequireNoSecretsIn(t, rec.Body.String(), []string{f.secret})
			f.requireClean(t)
		})
	}
}

// TestReplayRefused: the same signed request sent again within the window
// is refused; it decided once.
func TestReplayRefused(t *testing.T) {
	f := newFixture(t)
	body := f.payload(slack.ActionApprove).Body()
	send := func() int {
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, f.signer.Request(target, body, now.Add(-time.Minute)))
		return rec.Code
	}
	require.Equal(t, http.StatusOK, send())
	require.Equal(t, http.StatusUnauthorized, send())
	require.Len(t, f.dec.Calls(), 1, "decided once")
	require.Len(t, f.recv.Responses(), 1)
	require.Contains(t, f.logs(), `reason="replayed signature"`)
	f.requireClean(t)
}

// TestNotAnApprover: a user outside the notifier's approvers decides
// nothing and gets an ephemeral reply (the message stays); the refusal
// is logged.
func TestNotAnApprover(t *testing.T) {
	f := newFixture(t)
	p := f.payload(slack.ActionApprove)
	p.UserID, p.UserName = "U0STRANGER", "mallory"
	require.Equal(t, http.StatusOK, f.serve(t, f.signer, p, now))
	require.Empty(t, f.dec.Calls())
	got := f.recv.Responses()
	require.Len(t, got, 1)
	require.Equal(t, notifytest.SlackResponse{Path: "/actions/T0DRIFTW0/B0123/hook", ContentType: "application/json", ResponseType: "ephemeral",
		Text: "You are not an approver of driftwatch remediations posted by notifier slack-oncall, so nothing was decided. Ask an approver, or use `driftwatch approve rem-1`."}, got[0])
	require.Contains(t, f.logs(), `level=WARN msg="slack interaction refused" remote_addr=192.0.2.1:1234 notifier=slack-oncall remediation=rem-1 action=driftwatch_approve slack_user=U0STRANGER reason="not an approver"`)
	f.requireClean(t)

	// An approver of another notifier is not one of this notifier's.
	f = newFixture(t)
	p = f.payload(slack.ActionReject)
	p.UserID = "U0OTHER02"
	require.Equal(t, http.StatusOK, f.serve(t, f.signer, p, now))
	require.Empty(t, f.dec.Calls())
}

// TestOtherChannelRefused: a bot notifier's button clicked outside its
// channel decides nothing.
func TestOtherChannelRefused(t *testing.T) {
	f := newFixture(t)
	p := f.payload(slack.ActionApprove)
	p.Channel = "C0ELSEWHERE"
	require.Equal(t, http.StatusOK, f.serve(t, f.signer, p, now))
	require.Empty(t, f.dec.Calls())
	got := f.recv.Responses()
	require.Len(t, got, 1)
	require.Equal(t, "ephemeral", got[0].ResponseType)
	require.Contains(t, f.logs(), `reason="clicked outside the notifier's channel"`)
}

// TestResponseURLOrigin: a payload whose response_url is not on the
// allowed origin decides nothing and is never posted to.
func TestResponseURLOrigin(t *testing.T) {
	f := newFixture(t)
	evil := notifytest.NewSlackResponseServer(t)
	p := f.payload(slack.ActionApprove)
	p.ResponseURL = evil.ResponseURL("B0123")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, f.signer.Request(target, p.Body(), now))
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.Empty(t, f.dec.Calls())
	require.Empty(t, evil.Responses())
	require.Contains(t, f.logs(), `reason="response_url is not on the allowed origin"`)

	for u, ok := range map[string]bool{
		"https://hooks.slack.com/actions/T0/1/abc":       true,
		"https://HOOKS.slack.com/actions/T0/1/abc":       true,
		"http://hooks.slack.com/actions/T0/1/abc":        false,
		"https://hooks.slack.com.evil.example/actions/1": false,
		"https://hooks.slack.com@evil.example/actions/1": false,
		"https://evil.example/hooks.slack.com/actions/1": false,
		"https://hooks.slack.com:8443/actions/1":         false,
		"hooks.slack.com/actions/1":                      false,
		"":                                               false,
	} {
		require.Equal(t, ok, validResponseURL(u, ""), u)
	}
	require.True(t, validResponseURL(f.recv.ResponseURL("x"), f.recv.URL))
	require.False(t, validResponseURL(f.recv.ResponseURL("x"), ""), "a loopback URL only with a configured origin")
}

// TestIgnoredInteractions: signed interactions that are not a driftwatch
// button are answered 200 and decide nothing; a driftwatch button with a
// malformed value is refused.
func TestIgnoredInteractions(t *testing.T) {
	f := newFixture(t)
	p := f.payload("some_other_app_button")
	require.Equal(t, http.StatusOK, f.serve(t, f.signer, p, now))
	p = f.payload(slack.ActionApprove)
	p.Value = "rem-1"
	require.Equal(t, http.StatusBadRequest, f.serve(t, f.signer, p, now))
	require.Empty(t, f.dec.Calls())
	require.Empty(t, f.recv.Responses())
}

func TestActor(t *testing.T) {
	require.Equal(t, "slack:U0APPROVE1 (alice)", actor("U0APPROVE1", "alice"))
	require.Equal(t, "slack:U0APPROVE1", actor("U0APPROVE1", ""))
	require.Equal(t, "slack:U0APPROVE1 (alicebob)", actor("U0APPROVE1", "alice\n<bob>"))
}

func TestNewRequiresOptions(t *testing.T) {
	_, err := New(Options{})
	require.EqualError(t, err, "driftwatch/slackinteract: Options.Notifiers is required\n"+
		"driftwatch/slackinteract: Options.Decider is required\n"+
		"driftwatch/slackinteract: Options.WithActor is required\n"+
		"driftwatch/slackinteract: Options.Logger is required")
}

// TestNotifiersUnavailable: when the notifiers cannot be read (a signing
// secret file gone), requests are answered 500 and nothing is decided.
func TestNotifiersUnavailable(t *testing.T) {
	logger, logs := notifytest.CaptureLogger()
	dec := &decider{}
	h, err := New(Options{
		Notifiers: func() ([]Notifier, error) {
			return nil, errors.New(`notifier "slack-oncall": signing_secret_file: open /etc/dw/signing: no such file or directory`)
		},
		Decider: dec, WithActor: withActor, Logger: logger, Now: func() time.Time { return now },
	})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	p := notifytest.SlackActionPayload{UserID: approver, ActionID: slack.ActionApprove, Value: slack.ActionValue{Notifier: "slack-oncall", Remediation: "rem-1"}.String()}
	h.ServeHTTP(rec, notifytest.SlackSigner{Secret: "s"}.Request(target, p.Body(), now))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Empty(t, dec.Calls())
	require.Contains(t, logs(), `level=ERROR msg="slack interaction: cannot load the notifiers"`)
}
