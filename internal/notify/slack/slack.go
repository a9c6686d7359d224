package slack

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// Metadata event types. The parent's metadata is how a retried delivery
// finds a parent it posted before a crash; a reply's, a reply.
const (
	eventTypeParent = "driftwatch_incident"
	eventTypeReply  = "driftwatch_incident_update"
)

const (
	// lookupMargin widens the history lookup before the message's time
	// (clock skew between us and Slack).
	lookupMargin = 5 * time.Minute
	// lookupPageSize and lookupMaxPages bound a duplicate lookup; a parent
	// older than that many channel messages is not found, and a duplicate
	// is posted rather than none.
	lookupPageSize = 100
	lookupMaxPages = 10
)

// Notifier delivers notify.Messages to one Slack destination. It is safe
// for concurrent use.
type Notifier struct {
	name        string
	mode        string
	interactive bool // Approve / Reject buttons (Config.Interactive)
	channel     string
	timeout     time.Duration
	api         *slackgo.Client // bot mode
	hookURL     string          // webhook mode; a secret
	http        *http.Client
	redact      redactor
	logger      *slog.Logger
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads its secret file. httpClient may be nil (a
// plain client; every request is bounded by cfg.Timeout through its
// context either way); so may logger (discard). No error of New or of the
// Notifier contains the token or the webhook URL.
func New(cfg Config, httpClient *http.Client, logger *slog.Logger) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("slack notifier %q: %w", cfg.Name, err)
	}
	cfg.Mode = cmp.Or(cfg.Mode, ModeBot)
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{
		name:        cfg.Name,
		mode:        cfg.Mode,
		interactive: cfg.Interactive,
		channel:     cfg.Channel,
		timeout:     cfg.Timeout,
		http:        httpClient,
		logger:      logger.With("notifier", cfg.Name, "mode", cfg.Mode),
	}
	if n.timeout == 0 {
		n.timeout = DefaultTimeout
	}
	switch cfg.Mode {
	case ModeBot:
		token, err := readSecret("token_file", cfg.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("slack notifier %q: %w", cfg.Name, err)
		}
		if strings.ContainsAny(token, " \t\r\n") {
			return nil, fmt.Errorf("slack notifier %q: token_file %q: the token contains whitespace", cfg.Name, cfg.TokenFile)
		}
		apiURL := cfg.APIURL
		if apiURL == "" {
			apiURL = DefaultAPIURL
		}
		if !strings.HasSuffix(apiURL, "/") {
			apiURL += "/" // slack-go appends the method name: ".../api" + "chat.postMessage" would 404
		}
		n.redact = newRedactor(token)
		// slack-go reads Retry-After only on a 429; the transport keeps it
		// for 503s too. A copy, so the caller's client is left alone.
		c := *httpClient
		c.Transport = retryAfterTransport{base: httpClient.Transport}
		// No OptionRetry: retries belong to the outbox, which honours the
		// Retry-After we return (retry wraps the notifier, not inside it).
		n.api = slackgo.New(token, slackgo.OptionAPIURL(apiURL), slackgo.OptionHTTPClient(&c))
	case ModeWebhook:
		raw, err := readSecret("webhook_url_file", cfg.WebhookURLFile)
		if err != nil {
			return nil, fmt.Errorf("slack notifier %q: %w", cfg.Name, err)
		}
		u, perr := url.Parse(raw)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(u.Path) < 2 {
			// Never the URL or the parse error: both contain the secret.
			return nil, fmt.Errorf("slack notifier %q: webhook_url_file %q: not an http(s) URL with a path", cfg.Name, cfg.WebhookURLFile)
		}
		n.hookURL = raw
		n.redact = newRedactor(raw)
	}
	return n, nil
}

func readSecret(key, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err) // names the path, not the content
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s %q: empty", key, path)
	}
	return s, nil
}

// Name is the configured instance name.
func (n *Notifier) Name() string { return n.name }

// Notify delivers m. In webhook mode it posts one message and returns state
// unchanged. In bot mode:
//   - EventOpen posts the parent message (after checking the channel's
//     history for one an earlier attempt posted), calls saveState with its
//     channel and ts at once, and returns.
//   - EventUpdate, EventRenotify and EventResolve update the parent in
//     place and post a thread reply (a renotify reply is also broadcast to
//     the channel). Without a usable parent (none stored, the previous
//     incident's, or deleted in Slack) a new parent is posted first.
//   - EventRemediation posts a thread reply; a failed apply (failed,
//     verification_failed) also updates the parent, which then shows the
//     raised severity and "remediation failed". Without a usable parent it
//     is handled like an update (a parent is posted first).
//
// The returned state replaces the stored one on success; on error it is
// nil and whatever saveState stored stands.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, state []byte, saveState func([]byte) error) ([]byte, error) {
	if m.Event == notify.EventRemediation && m.Remediation == nil {
		return nil, fmt.Errorf("slack %s: message %s: remediation event without its remediation", n.name, m.ID)
	}
	if n.mode == ModeWebhook {
		if err := n.postWebhook(ctx, m); err != nil {
			return nil, err
		}
		return state, nil
	}
	log := n.logger.With("incident_key", m.Incident.Key, "message_id", m.ID, "event", string(m.Event))
	prev, err := decodeState(state)
	if err != nil {
		// A duplicate parent is the worst case: the history lookup below
		// still finds a parent this message posted.
		log.Warn("ignoring unreadable notifier state", "err", err)
	}
	if saveState == nil {
		saveState = func([]byte) error { return nil }
	}
	return n.notifyBot(ctx, log, m, prev, saveState)
}

func (n *Notifier) notifyBot(ctx context.Context, log *slog.Logger, m notify.Message, prev *parentState, saveState func([]byte) error) ([]byte, error) {
	if m.Event == notify.EventOpen && prev != nil && prev.ParentMessageID == m.ID {
		log.Debug("parent already posted", "channel", prev.Channel, "ts", prev.TS)
		return prev.encode(), nil
	}
	var (
		st            *parentState
		replyMayExist bool
	)
	// An open for an incident that already has a parent (same opening
	// time) updates it rather than posting a second one.
	if prev.sameIncident(m, m.Event == notify.EventOpen) {
		var gone bool
		// A remediation leaves the parent alone unless it failed: the
		// parent shows the incident's status, which only that changes.
		if m.Event != notify.EventRemediation || m.Remediation.Result.Failed() {
			var err error
			if gone, err = n.updateParent(ctx, m, prev); err != nil {
				return nil, err
			}
		}
		if gone {
			log.Info("parent message is gone; posting a new one", "channel", prev.Channel, "ts", prev.TS)
		} else {
			st, replyMayExist = prev, prev.PendingReply == m.ID
		}
	}
	if st == nil {
		pendingReply := ""
		if m.Event != notify.EventOpen {
			pendingReply = m.ID
		}
		var reused bool
		var err error
		st, reused, err = n.ensureParent(ctx, log, m, pendingReply, saveState)
		if err != nil {
			return nil, err
		}
		replyMayExist = reused
	} else if m.Event != notify.EventOpen && !replyMayExist {
		// Write ahead: after a crash or a lost response, the retry must
		// know this reply may exist.
		next := *st
		next.PendingReply = m.ID
		if err := save(saveState, next); err != nil {
			return nil, err
		}
	}
	if m.Event != notify.EventOpen {
		if err := n.postReply(ctx, log, m, st, replyMayExist); err != nil {
			return nil, err
		}
	}
	final := *st
	final.PendingReply = ""
	final.Resolved = m.Event == notify.EventResolve
	return final.encode(), nil
}

// ensureParent finds the parent an earlier attempt of m posted or posts
// one, then saves its channel and ts before anything else can fail.
func (n *Notifier) ensureParent(ctx context.Context, log *slog.Logger, m notify.Message, pendingReply string, saveState func([]byte) error) (*parentState, bool, error) {
	ts, err := n.findParent(ctx, log, m)
	if err != nil {
		return nil, false, err
	}
	channel, reused := n.channel, ts != ""
	if reused {
		log.Info("reusing the parent an earlier attempt posted", "channel", channel, "ts", ts)
	} else {
		rctx, cancel := n.requestContext(ctx)
		channel, ts, err = n.api.PostMessageContext(rctx, n.channel,
			slackgo.MsgOptionText(buildText(m), false),
			slackgo.MsgOptionBlocks(buildBlocks(m)...),
			slackgo.MsgOptionMetadata(metadata(eventTypeParent, m.Incident.Key, m.ID)),
			slackgo.MsgOptionDisableLinkUnfurl(),
			slackgo.MsgOptionDisableMediaUnfurl(),
		)
		if err != nil {
			err = n.classify(rctx, "chat.postMessage to "+n.channel, err)
			cancel()
			return nil, false, err
		}
		cancel()
		if channel == "" {
			channel = n.channel
		}
		log.Info("posted parent message", "channel", channel, "ts", ts)
	}
	st := &parentState{Channel: channel, TS: ts, ParentMessageID: m.ID, Since: unixOrZero(m.Incident.Since), PendingReply: pendingReply}
	if err := save(saveState, *st); err != nil {
		return nil, false, err
	}
	return st, reused, nil
}

// lookupRefusedCodes are answers to a duplicate lookup that say the app
// may not read the channel (no channels:history scope, not a member of a
// public channel) while it may still post there. The lookup is then
// skipped with a warning: at worst a duplicate, never a lost page. Any
// other error fails the delivery as it would fail the post.
var lookupRefusedCodes = map[string]bool{
	"missing_scope":          true,
	"not_in_channel":         true,
	"not_allowed_token_type": true,
	"no_permission":          true,
	"access_denied":          true,
}

// findParent returns the ts of a parent message that m created, if an
// earlier attempt posted one (a crash or a lost response between the post
// and saveState).
func (n *Notifier) findParent(ctx context.Context, log *slog.Logger, m notify.Message) (string, error) {
	params := &slackgo.GetConversationHistoryParameters{
		ChannelID: n.channel, Oldest: oldest(m.At), Limit: lookupPageSize, IncludeAllMetadata: true,
	}
	for range lookupMaxPages {
		rctx, cancel := n.requestContext(ctx)
		resp, err := n.api.GetConversationHistoryContext(rctx, params)
		if err != nil {
			refused := lookupRefusedCodes[slackCode(err)] && rctx.Err() == nil
			err = n.classify(rctx, "conversations.history of "+n.channel, err)
			cancel()
			if !refused {
				return "", err
			}
			log.Warn("cannot check for an earlier parent; posting without the duplicate check", "err", err)
			return "", nil
		}
		cancel()
		for _, msg := range resp.Messages {
			if msg.ThreadTimestamp != "" && msg.ThreadTimestamp != msg.Timestamp {
				continue // a broadcast thread reply
			}
			if isOurs(msg.Metadata, eventTypeParent, m.ID) {
				return msg.Timestamp, nil
			}
		}
		if !resp.HasMore || resp.ResponseMetaData.NextCursor == "" {
			return "", nil
		}
		params.Cursor = resp.ResponseMetaData.NextCursor
	}
	log.Warn("duplicate check stopped after the page limit", "pages", lookupMaxPages)
	return "", nil
}

// updateParent rewrites the parent with the incident's current status. gone
// reports that the parent no longer exists (deleted in Slack).
func (n *Notifier) updateParent(ctx context.Context, m notify.Message, st *parentState) (gone bool, err error) {
	parentID := st.ParentMessageID
	if parentID == "" {
		parentID = m.ID
	}
	rctx, cancel := n.requestContext(ctx)
	defer cancel()
	_, _, _, err = n.api.UpdateMessageContext(rctx, st.Channel, st.TS,
		slackgo.MsgOptionText(buildText(m), false),
		slackgo.MsgOptionBlocks(buildBlocks(m)...),
		// The parent keeps the metadata of the message that created it.
		slackgo.MsgOptionMetadata(metadata(eventTypeParent, m.Incident.Key, parentID)),
	)
	if err == nil {
		return false, nil
	}
	if parentGoneCodes[slackCode(err)] && rctx.Err() == nil {
		return true, nil
	}
	return false, n.classify(rctx, "chat.update of "+st.Channel+" "+st.TS, err)
}

// postReply posts m's thread reply unless mayExist and an earlier attempt
// already did.
func (n *Notifier) postReply(ctx context.Context, log *slog.Logger, m notify.Message, st *parentState, mayExist bool) error {
	if mayExist {
		found, err := n.findReply(ctx, log, m, st)
		if err != nil {
			return err
		}
		if found {
			log.Info("thread reply already posted by an earlier attempt", "channel", st.Channel, "thread_ts", st.TS)
			return nil
		}
	}
	opts := []slackgo.MsgOption{
		slackgo.MsgOptionText(buildThreadText(m), false),
		slackgo.MsgOptionBlocks(threadBlocks(m, n.actions(m))...),
		slackgo.MsgOptionTS(st.TS),
		slackgo.MsgOptionMetadata(metadata(eventTypeReply, m.Incident.Key, m.ID)),
		slackgo.MsgOptionDisableLinkUnfurl(),
		slackgo.MsgOptionDisableMediaUnfurl(),
	}
	if m.Event == notify.EventRenotify {
		// A reminder nobody sees in a collapsed thread is no reminder.
		opts = append(opts, slackgo.MsgOptionBroadcast())
	}
	rctx, cancel := n.requestContext(ctx)
	defer cancel()
	_, ts, err := n.api.PostMessageContext(rctx, st.Channel, opts...)
	if err != nil {
		return n.classify(rctx, "chat.postMessage to "+st.Channel+" thread "+st.TS, err)
	}
	log.Debug("posted thread reply", "channel", st.Channel, "thread_ts", st.TS, "ts", ts)
	return nil
}

// findReply reports whether the thread already holds m's reply.
func (n *Notifier) findReply(ctx context.Context, log *slog.Logger, m notify.Message, st *parentState) (bool, error) {
	params := &slackgo.GetConversationRepliesParameters{
		ChannelID: st.Channel, Timestamp: st.TS, Oldest: oldest(m.At), Limit: lookupPageSize, IncludeAllMetadata: true,
	}
	for range lookupMaxPages {
		rctx, cancel := n.requestContext(ctx)
		msgs, hasMore, cursor, err := n.api.GetConversationRepliesContext(rctx, params)
		if err != nil {
			refused := lookupRefusedCodes[slackCode(err)] && rctx.Err() == nil
			err = n.classify(rctx, "conversations.replies of "+st.Channel+" "+st.TS, err)
			cancel()
			if !refused {
				return false, err
			}
			log.Warn("cannot check for an earlier thread reply; posting without the duplicate check", "err", err)
			return false, nil
		}
		cancel()
		for _, msg := range msgs {
			if isOurs(msg.Metadata, eventTypeReply, m.ID) {
				return true, nil
			}
		}
		if !hasMore || cursor == "" {
			return false, nil
		}
		params.Cursor = cursor
	}
	return false, nil
}

// postWebhook posts one self-contained message to the incoming webhook.
// It does not use slack.PostWebhookCustomHTTPContext: that discards the
// response body, which is the only place Slack says why (invalid_blocks,
// no_service, channel_is_archived).
func (n *Notifier) postWebhook(ctx context.Context, m notify.Message) error {
	no := false
	body, err := json.Marshal(slackgo.WebhookMessage{
		Text:        buildText(m),
		Blocks:      &slackgo.Blocks{BlockSet: webhookBlocks(m, n.actions(m))},
		UnfurlLinks: &no,
		UnfurlMedia: &no,
	})
	if err != nil {
		return fmt.Errorf("webhook: encode message: %w", err)
	}
	rctx, cancel := n.requestContext(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.hookURL, bytes.NewReader(body))
	if err != nil {
		return errors.New("webhook: cannot build the request") // the error would quote the URL
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.http.Do(req)
	if err != nil {
		return n.classify(rctx, "webhook", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if err != nil && rctx.Err() != nil {
		return n.classify(rctx, "webhook", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	detail := ""
	if c := strings.TrimSpace(string(answer)); codePattern.MatchString(c) {
		detail = n.redact.redact(c)
	}
	return httpStatusError("webhook", resp.StatusCode, detail, notify.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
}

// requestContext bounds one HTTP request and carries the box its
// Retry-After header lands in.
func (n *Notifier) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(ctx, retryAfterKey{}, &retryAfterBox{})
	return context.WithTimeoutCause(ctx, n.timeout,
		fmt.Errorf("no answer from slack within %s: %w", n.timeout, context.DeadlineExceeded))
}

type retryAfterKey struct{}

type retryAfterBox struct {
	mu    sync.Mutex
	value string
}

func (b *retryAfterBox) set(v string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.value = v
}

// retryAfter returns the Retry-After of the request made with ctx (0 if
// none).
func retryAfter(ctx context.Context) time.Duration {
	b, ok := ctx.Value(retryAfterKey{}).(*retryAfterBox)
	if !ok {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return notify.ParseRetryAfter(b.value, time.Now())
}

// retryAfterTransport records each response's Retry-After header in the
// request context's box.
type retryAfterTransport struct{ base http.RoundTripper }

func (t retryAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if resp != nil {
		if b, ok := req.Context().Value(retryAfterKey{}).(*retryAfterBox); ok {
			b.set(resp.Header.Get("Retry-After"))
		}
	}
	return resp, err
}

func save(saveState func([]byte) error, st parentState) error {
	if err := saveState(st.encode()); err != nil {
		// Retryable: the parent exists and the retry's history lookup
		// finds it, so retrying cannot duplicate it.
		return notify.Retryable(fmt.Errorf("save state: %w", err), 0)
	}
	return nil
}

// metadata is the Slack message metadata (api.slack.com/metadata) naming
// the incident and the notify.Message a message was posted for.
func metadata(eventType, incidentKey, messageID string) slackgo.SlackMetadata {
	return slackgo.SlackMetadata{
		EventType:    eventType,
		EventPayload: map[string]any{"incident_key": incidentKey, "message_id": messageID},
	}
}

func isOurs(md slackgo.SlackMetadata, eventType, messageID string) bool {
	if md.EventType != eventType {
		return false
	}
	id, _ := md.EventPayload["message_id"].(string)
	return id == messageID
}

// oldest is the lower bound of a duplicate lookup for a message created at
// at, as a Slack ts ("" when at is unknown: the newest pages).
func oldest(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	t := at.Add(-lookupMargin)
	return strconv.FormatInt(t.Unix(), 10) + "." + fmt.Sprintf("%06d", t.Nanosecond()/1000)
}
