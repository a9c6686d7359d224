package slackinteract

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Route is the ServeMux pattern the daemon mounts the Handler at; the
// Slack app's interactivity Request URL is server.external_url +
// "/api/v1/slack/interactions".
const Route = "POST /api/v1/slack/interactions"

// DefaultResponseOrigin is where Slack's response_urls live.
const DefaultResponseOrigin = "https://hooks.slack.com"

const (
	// Window is how far a request's timestamp may be from now, and how
	// long a signature is remembered to refuse its replay.
	Window = 5 * time.Minute
	// MaxBody bounds a request's body: a payload carries the clicked
	// message's blocks (Slack caps those near 13k characters, which form
	// and JSON escaping can triple).
	MaxBody = 256 << 10
	// maxSeen bounds the replay cache; when it is full of signatures still
	// in their window, requests are refused rather than let through.
	maxSeen = 10000
	// decideTimeout bounds the decision and the reply together. They do
	// not depend on Slack's request (which Slack abandons after 3
	// seconds): a decision taken is reported.
	decideTimeout = 15 * time.Second
	// maxErrorText caps an error shown in Slack.
	maxErrorText = 300
)

// Decider decides remediations: the daemon's remediation control, the one
// the API's approve and reject endpoints use. Approve's hash, if not "",
// must equal the remediation's change set hash.
type Decider interface {
	Approve(ctx context.Context, id, hash string) (store.Remediation, error)
	Reject(ctx context.Context, id string) (store.Remediation, error)
}

// Notifier is one Slack notifier whose buttons are answered.
type Notifier struct {
	// Name is the notifier's name, which its buttons carry.
	Name string
	// SigningSecret is its Slack app's signing secret.
	SigningSecret string
	// Approvers are the Slack user IDs (U0123ABCD) allowed to decide.
	Approvers []string
	// Channel, if set, is the only channel its messages are in (bot
	// mode); a button clicked elsewhere is refused.
	Channel string
	// ResponseOrigin is the scheme and host response_urls must have
	// ("" is DefaultResponseOrigin); a notifier whose Slack API is
	// redirected (tests, proxies) sets that API's origin.
	ResponseOrigin string
}

// Options configures New.
type Options struct {
	// Notifiers returns the notifiers whose buttons are answered. It is
	// called for every request, so a config reload (approvers, a rotated
	// signing secret) applies at once; its error must not contain a
	// secret.
	Notifiers func() ([]Notifier, error)
	// Decider approves and rejects.
	Decider Decider
	// WithActor returns a context that makes the Decider record actor as
	// who decided (remediation.WithActor).
	WithActor func(ctx context.Context, actor string) context.Context
	// HashMismatchErr is the error Decider.Approve returns when the hash
	// is not the remediation's (server.ErrHashMismatch).
	HashMismatchErr error
	// Logger is required.
	Logger *slog.Logger
	// HTTPClient posts to response_urls (default: a plain client).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnDecision, if set, is told of every click on an Approve or Reject
	// button that passed the authentication, allowed or not (the daemon
	// records it in the audit log). It is called before the reply is
	// posted; it must not block for long.
	OnDecision func(ctx context.Context, d Decision)
	// OnRefused, if set, is told of every request refused before it was
	// authenticated (no or a bad signature, a stale timestamp, a replay,
	// a body too large): the daemon records it in the audit log as an
	// anonymous entry. It must not block for long.
	OnRefused func(ctx context.Context, r Refusal)
	// Replay, if set, keeps the signatures seen within Window, so that a
	// replay is refused after a restart too (the daemon passes its
	// store); nil: the Handler keeps them in memory only.
	Replay store.ReplayStore
}

// Refusal is a request refused before it was authenticated, as OnRefused
// is told of it. Nothing in it comes from the request but its peer: who
// sent it is unknown, and the payload's user is never believed.
type Refusal struct {
	// At is when it was refused.
	At time.Time
	// RemoteAddr is the request's (the TCP peer's address and port).
	RemoteAddr string
	// Status is the HTTP status answered.
	Status int
	// Reason says why, in fixed words ("bad signature").
	Reason string
}

// Decision is a click on an Approve or Reject button, as OnDecision is
// told of it. It holds no secret and nothing the clicker typed.
type Decision struct {
	// At is when it was answered.
	At time.Time
	// Actor is who clicked, as the Decider records it:
	// "slack:U0123ABCD (alice)".
	Actor string
	// Action is "approve" or "reject".
	Action string
	// Remediation and Notifier are what the button carried.
	Remediation string
	Notifier    string
	// Result is store.AuditOK (decided), store.AuditDenied (the user is
	// not an approver, or clicked in another channel) or store.AuditError
	// (the Decider refused or failed).
	Result string
	// Detail says why not, in fixed words ("" when decided).
	Detail string
}

// Handler answers Slack interactivity requests. It is safe for concurrent
// use.
type Handler struct {
	o Options

	mu   sync.Mutex
	seen map[string]time.Time // signature → when it leaves the window
}

// New returns the Handler, or an error naming a missing option.
func New(o Options) (*Handler, error) {
	var errs []error
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"Notifiers", o.Notifiers == nil},
		{"Decider", o.Decider == nil},
		{"WithActor", o.WithActor == nil},
		{"Logger", o.Logger == nil},
	} {
		if f.missing {
			errs = append(errs, fmt.Errorf("driftwatch/slackinteract: Options.%s is required", f.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{o: o, seen: map[string]time.Time{}}, nil
}

// payload is the part of a block_actions payload the Handler reads.
type payload struct {
	Type string `json:"type"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		ChannelID string `json:"channel_id"`
		MessageTS string `json:"message_ts"`
	} `json:"container"`
	Message struct {
		TS     string            `json:"ts"`
		Blocks []json.RawMessage `json:"blocks"`
	} `json:"message"`
	ResponseURL string `json:"response_url"`
	Actions     []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

// reply is a message posted to a response_url.
type reply struct {
	ReplaceOriginal bool              `json:"replace_original"`
	ResponseType    string            `json:"response_type,omitempty"`
	Text            string            `json:"text"`
	Blocks          []json.RawMessage `json:"blocks,omitempty"`
}

// ServeHTTP authenticates the request (signature, timestamp, replay), then
// answers a click on an Approve or Reject button: the user must be one of
// the notifier's approvers; the decision goes through the Decider and the
// message is replaced with who decided (or why it could not be), through
// the payload's response_url. Authentication failures answer 401, an
// oversized body 413, a malformed payload 400; a user who may not decide
// gets 200 and an ephemeral reply that only they see.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.o.Logger.With("remote_addr", r.RemoteAddr)
	refuse := func(code int, reason string, args ...any) {
		log.Warn("slack interaction refused", append([]any{"reason", reason}, args...)...)
		http.Error(w, http.StatusText(code), code)
	}
	// deny refuses a request that is not (yet) authenticated, and tells
	// OnRefused.
	deny := func(code int, reason string, args ...any) {
		refuse(code, reason, args...)
		if h.o.OnRefused != nil {
			h.o.OnRefused(context.WithoutCancel(r.Context()), Refusal{At: h.o.Now(), RemoteAddr: r.RemoteAddr, Status: code, Reason: reason})
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			deny(http.StatusRequestEntityTooLarge, "body too large", "limit", MaxBody)
			return
		}
		refuse(http.StatusBadRequest, "unreadable body", "err", err)
		return
	}
	tsHeader, sig := r.Header.Get("X-Slack-Request-Timestamp"), r.Header.Get("X-Slack-Signature")
	if tsHeader == "" || sig == "" {
		deny(http.StatusUnauthorized, "missing signature headers")
		return
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		deny(http.StatusUnauthorized, "malformed timestamp")
		return
	}
	now := h.o.Now()
	sent := time.Unix(ts, 0)
	if d := now.Sub(sent); d > Window || d < -Window {
		deny(http.StatusUnauthorized, "stale timestamp", "skew", d.Round(time.Second).String())
		return
	}
	notifiers, err := h.o.Notifiers()
	if err != nil {
		log.Error("slack interaction: cannot load the notifiers", "err", err)
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	signed := signedBy(notifiers, tsHeader, body, sig)
	if len(signed) == 0 {
		deny(http.StatusUnauthorized, "bad signature")
		return
	}
	switch h.remember(r.Context(), log, sig, sent.Add(Window), now) {
	case replayed:
		deny(http.StatusUnauthorized, "replayed signature")
		return
	case full:
		deny(http.StatusServiceUnavailable, "replay cache full")
		return
	case unavailable:
		deny(http.StatusServiceUnavailable, "replay cache unavailable")
		return
	}

	form, err := url.ParseQuery(string(body))
	var p payload
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &p)
	}
	if err != nil {
		refuse(http.StatusBadRequest, "malformed payload")
		return
	}
	if p.Type != "block_actions" || len(p.Actions) == 0 ||
		(p.Actions[0].ActionID != slack.ActionApprove && p.Actions[0].ActionID != slack.ActionReject) {
		log.Debug("slack interaction ignored: not a driftwatch button", "type", p.Type)
		w.WriteHeader(http.StatusOK)
		return
	}
	act := p.Actions[0]
	v, err := slack.ParseActionValue(act.Value)
	if err != nil {
		refuse(http.StatusBadRequest, "malformed button value", "err", err)
		return
	}
	log = log.With("notifier", v.Notifier, "remediation", v.Remediation, "action", act.ActionID, "slack_user", p.User.ID)
	i := slices.IndexFunc(signed, func(n Notifier) bool { return n.Name == v.Notifier })
	if i < 0 {
		refuse(http.StatusUnauthorized, "signed with another notifier's signing secret (or the notifier has no signing_secret_file)")
		return
	}
	n := signed[i]
	if !validResponseURL(p.ResponseURL, n.ResponseOrigin) {
		refuse(http.StatusBadRequest, "response_url is not on the allowed origin", "allowed", origin(n.ResponseOrigin))
		return
	}
	channel := first(p.Channel.ID, p.Container.ChannelID)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), decideTimeout)
	defer cancel()
	d := Decision{Actor: actor(p.User.ID, first(p.User.Username, p.User.Name)), Action: "approve",
		Remediation: v.Remediation, Notifier: n.Name}
	if act.ActionID == slack.ActionReject {
		d.Action = "reject"
	}
	switch {
	case p.User.ID == "" || !slices.Contains(n.Approvers, p.User.ID):
		log.Warn("slack interaction refused", "reason", "not an approver")
		h.noteDecision(ctx, d, store.AuditDenied, "not an approver of this notifier")
		h.respond(ctx, log, p.ResponseURL, reply{ResponseType: "ephemeral", Text: fmt.Sprintf(
			"You are not an approver of driftwatch remediations posted by notifier %s, so nothing was decided. Ask an approver, or use `driftwatch approve %s`.",
			esc(n.Name), esc(v.Remediation))})
	case n.Channel != "" && channel != n.Channel:
		log.Warn("slack interaction refused", "reason", "clicked outside the notifier's channel", "channel", channel)
		h.noteDecision(ctx, d, store.AuditDenied, "clicked outside the notifier's channel")
		h.respond(ctx, log, p.ResponseURL, reply{ResponseType: "ephemeral",
			Text: "This button belongs to a driftwatch message of another channel; nothing was decided."})
	default:
		rep, result, detail := h.decide(ctx, log, p, act.ActionID, v)
		h.noteDecision(ctx, d, result, detail)
		h.respond(ctx, log, p.ResponseURL, rep)
	}
	w.WriteHeader(http.StatusOK)
}

// noteDecision tells Options.OnDecision, if set, of d with its result.
func (h *Handler) noteDecision(ctx context.Context, d Decision, result, detail string) {
	if h.o.OnDecision == nil {
		return
	}
	d.At, d.Result, d.Detail = h.o.Now(), result, detail
	h.o.OnDecision(ctx, d)
}

// decide approves or rejects and returns the reply: the message replaced
// (buttons dropped) saying who decided, or why not; an ephemeral reply for
// an error that a later click may not meet. result and detail are the
// outcome as the audit log records it (Decision).
func (h *Handler) decide(ctx context.Context, log *slog.Logger, p payload, actionID string, v slack.ActionValue) (_ reply, result, detail string) {
	actx := h.o.WithActor(ctx, actor(p.User.ID, first(p.User.Username, p.User.Name)))
	verb, past, emoji := "approve", "Approved", ":white_check_mark:"
	var err error
	if actionID == slack.ActionApprove {
		_, err = h.o.Decider.Approve(actx, v.Remediation, v.Hash)
	} else {
		verb, past, emoji = "reject", "Rejected", ":no_entry_sign:"
		_, err = h.o.Decider.Reject(actx, v.Remediation)
	}
	at := h.o.Now().UTC()
	who := "<@" + p.User.ID + ">"
	if err == nil {
		log.Info("remediation decided in slack", "decision", strings.ToLower(past))
		return replaced(p, fmt.Sprintf("%s by %s at %s", past, who, at.Format("2006-01-02 15:04 MST")),
			fmt.Sprintf("%s *%s* by %s at %s.", emoji, past, who, slackDate(at))), store.AuditOK, ""
	}
	var why string
	switch {
	case h.o.HashMismatchErr != nil && errors.Is(err, h.o.HashMismatchErr):
		why, detail = "the change set is no longer the one this message showed", "change set changed"
	case errors.Is(err, store.ErrNotFound):
		why, detail = "no such remediation", "no such remediation"
	case errors.Is(err, store.ErrConflict):
		why, detail = err.Error(), "conflict"
	default:
		log.Error("slack interaction: decision failed", "err", err)
		rep := reply{ResponseType: "ephemeral", Text: fmt.Sprintf(
			"driftwatch could not %s remediation %s (internal error, logged); try again, or use the driftwatch CLI.", verb, esc(v.Remediation))}
		return rep, store.AuditError, "internal error"
	}
	log.Warn("slack interaction: decision refused", "reason", why)
	why = truncate(oneLine(why), maxErrorText)
	return replaced(p, fmt.Sprintf("%s could not %s: %s", who, verb, esc(why)),
		fmt.Sprintf(":warning: %s could not %s this remediation: %s", who, verb, esc(why))), store.AuditError, detail
}

// replaced is the clicked message without its buttons, with line (mrkdwn)
// under it; text is the notification text.
func replaced(p payload, text, line string) reply {
	var blocks []json.RawMessage
	for _, b := range p.Message.Blocks {
		var id struct {
			BlockID string `json:"block_id"`
		}
		if json.Unmarshal(b, &id) == nil && id.BlockID == slack.ActionsBlockID {
			continue
		}
		blocks = append(blocks, b)
	}
	sec, _ := json.Marshal(map[string]any{ // plain strings: cannot fail
		"type": "section", "block_id": "driftwatch_decision",
		"text": map[string]any{"type": "mrkdwn", "text": line},
	})
	return reply{ReplaceOriginal: true, Text: text, Blocks: append(blocks, sec)}
}

// respond posts rep to the response_url (validated by the caller). A
// failure is logged, without the URL: it is a credential.
func (h *Handler) respond(ctx context.Context, log *slog.Logger, responseURL string, rep reply) {
	body, err := json.Marshal(rep)
	if err != nil {
		log.Error("slack interaction: encode reply", "err", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		log.Warn("slack interaction: reply not sent", "err", "invalid response_url")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.o.HTTPClient.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL
		}
		log.Warn("slack interaction: reply not sent", "err", err)
		return
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode != http.StatusOK {
		log.Warn("slack interaction: reply refused by slack", "status", resp.StatusCode, "body", oneLine(string(msg)))
	}
}

// signedBy returns the notifiers whose signing secret produced sig.
// Every candidate is compared (in constant time), whichever matches.
func signedBy(ns []Notifier, ts string, body []byte, sig string) []Notifier {
	var out []Notifier
	for _, n := range ns {
		if n.SigningSecret == "" {
			continue
		}
		if hmac.Equal([]byte(sig), []byte(Sign(n.SigningSecret, ts, body))) {
			out = append(out, n)
		}
	}
	return out
}

// Sign is the X-Slack-Signature of body sent at ts (Unix seconds, as in
// X-Slack-Request-Timestamp) under secret: "v0=" and the hex HMAC-SHA256
// of "v0:" + ts + ":" + body.
func Sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

type seenResult int

const (
	fresh seenResult = iota
	replayed
	full
	unavailable
)

// remember records sig until until, reporting whether it was seen before
// (or the cache is full, or Options.Replay failed: a request is refused
// rather than let through unchecked).
func (h *Handler) remember(ctx context.Context, log *slog.Logger, sig string, until, now time.Time) seenResult {
	if h.o.Replay != nil {
		seen, err := h.o.Replay.RememberSignature(ctx, sig, until, now)
		switch {
		case err != nil:
			log.Error("slack interaction: replay cache", "err", err)
			return unavailable
		case seen:
			return replayed
		}
		return fresh
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if exp, ok := h.seen[sig]; ok && now.Before(exp) {
		return replayed
	}
	if len(h.seen) >= maxSeen {
		for s, exp := range h.seen {
			if !now.Before(exp) {
				delete(h.seen, s)
			}
		}
		if len(h.seen) >= maxSeen {
			return full
		}
	}
	h.seen[sig] = until
	return fresh
}

// validResponseURL reports whether u is an https (or, for a configured
// origin, that origin's scheme) URL on the allowed origin, without
// credentials.
func validResponseURL(u, allowed string) bool {
	p, err := url.Parse(u)
	if err != nil || p.User != nil || p.Host == "" || p.Opaque != "" {
		return false
	}
	a, err := url.Parse(origin(allowed))
	if err != nil {
		return false
	}
	return p.Scheme == a.Scheme && strings.EqualFold(p.Host, a.Host)
}

func origin(o string) string {
	if o == "" {
		return DefaultResponseOrigin
	}
	return o
}

// actor is how a Slack user is recorded as the decider: "slack:U0123ABCD"
// and, if known, the user name: "slack:U0123ABCD (alice)". The name is
// reduced to characters safe in logs and pages.
func actor(id, name string) string {
	a := "slack:" + clean(id, 32)
	if n := clean(name, 64); n != "" {
		a += " (" + n + ")"
	}
	return a
}

func clean(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= limit {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// esc escapes mrkdwn's control characters.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// slackDate is t as a Slack date token, shown in the reader's time zone.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.Format("2006-01-02 15:04 UTC"))
}
