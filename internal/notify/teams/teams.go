package teams

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// Notifier posts one Adaptive Card per message to a Workflows trigger.
// It implements notify.Notifier.
type Notifier struct {
	name   string
	url    string // the trigger URL: a secret
	logger *slog.Logger
	// redactions are the URL and its parts, longest first: removed from
	// every error text.
	redactions []string
	sender     notify.Sender
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the trigger URL from its file. It does no
// network I/O. hc (nil: a default client) is what requests go through (a
// proxy, a private CA, a test server); it is copied, and redirects are
// never followed, whatever hc says: the body would go where it was not
// configured to.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	rawURL, err := notify.Open("teams", cfg.Name, logger, cfg.Validate, notify.Secret{Key: "webhook_url_file", Path: cfg.WebhookURLFile,
		Want: "want one URL on one line",
		OK:   func(u string) bool { return !strings.ContainsAny(u, " \t\r\n") }})
	if err != nil {
		return nil, err
	}
	u, err := checkWebhookURL(rawURL, cfg.WebhookURLFile)
	if err != nil {
		return nil, fmt.Errorf("teams %q: %w", cfg.Name, err)
	}
	n := &Notifier{name: cfg.Name, url: rawURL, logger: logger.With("notifier", cfg.Name), redactions: redactions(rawURL, u)}
	n.sender = notify.NewSender("teams", cfg.Name, hc, cmp.Or(cfg.Timeout, DefaultTimeout), n.redact)
	return n, nil
}

// fixedSegments are the path segments every trigger URL has: not
// secrets, and too common to redact.
var fixedSegments = []string{"workflows", "triggers", "manual", "paths", "invoke", "powerautomate", "automations", "direct"}

// redactions lists the URL and every part of it that identifies the flow
// or carries its signature: the whole URL, its query, the sig, its path,
// the flow's ID (and any other long path segment), its host and the
// host's first label (the environment ID of a Power Platform host).
func redactions(raw string, u *url.URL) []string {
	r := []string{raw, u.String(), u.RawQuery, u.Query().Get("sig"), url.QueryEscape(u.Query().Get("sig")),
		u.EscapedPath(), u.Path, u.Host, u.Hostname()}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= 8 && !slices.Contains(fixedSegments, strings.ToLower(seg)) {
			r = append(r, seg)
		}
	}
	if label, _, ok := strings.Cut(u.Hostname(), "."); ok && len(label) >= 8 {
		r = append(r, label)
	}
	r = slices.DeleteFunc(r, func(s string) bool { return len(s) < 2 })
	slices.SortFunc(r, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(r)
}

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// Notify implements notify.Notifier: one card per message. Teams keeps
// nothing driftwatch could find again, so neither does the notifier:
// state is returned unchanged.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	body, err := encode(m)
	if err != nil {
		return state, fmt.Errorf("teams %s: %w", n.name, err)
	}
	if err := n.send(ctx, m, body); err != nil {
		return state, err
	}
	return state, nil
}

// errorBody is the error envelope Workflows answers with:
// {"error":{"code":...,"message":...}}.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// send posts body once (notify.Sender: 2xx is accepted; 408, 429, 5xx,
// network errors and timeouts are retryable, after Retry-After if sent;
// anything else is permanent, with the service's error code and message,
// redacted).
func (n *Notifier) send(ctx context.Context, m notify.Message, body []byte) error {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("User-Agent", "driftwatch-teams/1")
	code, _, err := n.sender.Send(ctx, notify.Request{Op: fmt.Sprintf("post %s card for %s", m.Event, m.Incident.Key), URL: n.url, Header: h, Body: body,
		Describe: func(code int, raw []byte) error { return n.apiError(code, raw) }})
	if err == nil {
		// Accepted by the flow, not yet posted: if the card never shows,
		// the flow's run history says why.
		n.logger.Debug("teams flow accepted the card", "incident", m.Incident.Key, "event", string(m.Event), "status", code, "bytes", len(body))
	}
	return err
}

// apiError is the response as an error, redacted and bounded, with a hint
// for the statuses that need a person.
func (n *Notifier) apiError(code int, raw []byte) *APIError {
	b := notify.Answer[errorBody](raw)
	e := &APIError{StatusCode: code, Code: n.clean(b.Error.Code, 100), Message: n.clean(b.Error.Message, 300)}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Hint = "the URL's signature was refused: copy the trigger URL again into webhook_url_file"
	case http.StatusNotFound:
		e.Hint = "no such flow: it was deleted or its trigger changed; create it again and update webhook_url_file"
	case http.StatusRequestEntityTooLarge:
		e.Hint = "the card is too large for Teams"
	}
	return e
}

func (n *Notifier) clean(s string, limit int) string {
	return notify.CleanText(s, limit, n.redact)
}

// redact removes the URL and its parts from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.redactions...) }

// APIError is an error answer of the Workflows trigger, redacted (notify.APIError).
type APIError = notify.APIError
