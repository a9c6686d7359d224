package pagerduty

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"unicode"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// routingKeyLen is the length of an Events API v2 integration key.
const routingKeyLen = 32

// Notifier sends incidents to one PagerDuty Events API v2 integration. It
// implements notify.Notifier.
type Notifier struct {
	name   string
	url    string // the enqueue endpoint
	key    string
	opts   options
	logger *slog.Logger
	sender notify.Sender
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the routing key file. It does no network
// I/O. hc (nil: a default client) is what requests go through (a proxy, a
// private CA, a test server); it is copied, and redirects are never
// followed, whatever hc says: the routing key is in the body.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	key, err := notify.Open("pagerduty", cfg.Name, logger, cfg.Validate, notify.Secret{Key: "routing_key_file", Path: cfg.RoutingKeyFile,
		Want: fmt.Sprintf("want the %d-character integration key of an Events API v2 integration, on one line", routingKeyLen),
		OK:   func(k string) bool { return len(k) == routingKeyLen && strings.IndexFunc(k, notKeyRune) < 0 }})
	if err != nil {
		return nil, err
	}
	n := &Notifier{
		name:   cfg.Name,
		url:    notify.Endpoint(cfg.URL, DefaultURL, enqueuePath).String(),
		key:    key,
		opts:   options{routingKey: key, source: notify.OneLine(cfg.Source), severities: severities(cfg)},
		logger: logger.With("notifier", cfg.Name),
	}
	n.sender = notify.NewSender("pagerduty", cfg.Name, hc, cmp.Or(cfg.Timeout, DefaultTimeout), n.redact)
	return n, nil
}

func notKeyRune(r rune) bool {
	return r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// Notify implements notify.Notifier: one event per message. PagerDuty
// keeps the incident's state (by dedup_key), so state is returned
// unchanged, and nil after a resolve.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	ev, err := buildEvent(m, n.opts)
	if err != nil {
		return state, fmt.Errorf("pagerduty %s: %w", n.name, err)
	}
	body, err := encode(ev)
	if err != nil {
		return state, fmt.Errorf("pagerduty %s: %s %s: %s", n.name, ev.EventAction, ev.DedupKey, n.redact(err.Error()))
	}
	if err := n.send(ctx, ev, body); err != nil {
		return state, err
	}
	return notify.KeptState(m, state), nil
}

// response is the Events API's answer: {"status","message","dedup_key"}
// on success, {"status","message","errors"} on a 400.
type response struct {
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	DedupKey string   `json:"dedup_key"`
	Errors   []string `json:"errors"`
}

// send posts body once (notify.Sender: 2xx is delivered; 408, 429, 5xx,
// network errors and timeouts are retryable, after Retry-After if sent;
// anything else, a 400 "invalid event" first, is permanent).
func (n *Notifier) send(ctx context.Context, ev event, body []byte) error {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("User-Agent", "driftwatch-pagerduty/1")
	_, raw, err := n.sender.Send(ctx, notify.Request{Op: fmt.Sprintf("%s %s", ev.EventAction, ev.DedupKey), URL: n.url, Header: h, Body: body,
		Describe: func(code int, raw []byte) error { return n.apiError(code, notify.Answer[response](raw)) }})
	if r := notify.Answer[response](raw); err == nil && r.DedupKey != "" && r.DedupKey != ev.DedupKey {
		n.logger.Warn("pagerduty answered with another dedup_key", "incident", ev.DedupKey, "dedup_key", n.clean(r.DedupKey, 300))
	}
	return err
}

// apiError is r as an error, redacted and bounded.
func (n *Notifier) apiError(code int, r response) *APIError {
	e := &APIError{StatusCode: code, Code: n.clean(r.Status, 100), Message: n.clean(r.Message, 300)}
	e.Errors = notify.Capped(r.Errors, 5, "… and %d more", func(s string) string { return n.clean(s, 300) })
	return e
}

func (n *Notifier) clean(s string, limit int) string {
	return notify.CleanText(s, limit, n.redact)
}

// redact removes the routing key from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.key) }

// APIError is an error answer of the Events API, redacted (notify.APIError).
type APIError = notify.APIError
