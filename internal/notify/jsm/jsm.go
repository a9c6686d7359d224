package jsm

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// Notifier sends incidents to one Jira Service Management "API"
// integration. It implements notify.Notifier.
type Notifier struct {
	name   string
	alerts *url.URL // the alerts endpoint
	key    string
	logger *slog.Logger
	sender notify.Sender
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the API key file. It does no network I/O.
// hc (nil: a default client) is what requests go through (a proxy, a
// private CA, a test server); it is copied, and redirects are never
// followed, whatever hc says.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	key, err := notify.Open("jsm", cfg.Name, logger, cfg.Validate, notify.Secret{Key: "api_key_file", Path: cfg.APIKeyFile,
		Want: "the key must be one line of printable ASCII without spaces",
		OK:   func(k string) bool { return strings.IndexFunc(k, notKeyRune) < 0 }})
	if err != nil {
		return nil, err
	}
	n := &Notifier{
		name:   cfg.Name,
		alerts: notify.Endpoint(cfg.APIURL, DefaultURL, alertsPath),
		key:    key,
		logger: logger.With("notifier", cfg.Name),
	}
	n.sender = notify.NewSender("jsm", cfg.Name, hc, cmp.Or(cfg.Timeout, DefaultTimeout), n.redact)
	return n, nil
}

// notKeyRune: a header value must be printable ASCII, and a key has no
// spaces.
func notKeyRune(r rune) bool { return r <= ' ' || r >= 0x7f }

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// Notify implements notify.Notifier: the message's requests (see
// buildRequests), in order, each once. JSM keeps the incident's alert by
// alias, so state is returned unchanged, and nil after a resolve.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
	reqs, err := buildRequests(m)
	if err != nil {
		return state, fmt.Errorf("jsm %s: %s", n.name, n.redact(err.Error()))
	}
	for _, r := range reqs {
		if err := n.send(ctx, m.Incident.Key, r); err != nil {
			return state, err
		}
	}
	return notify.KeptState(m, state), nil
}

// response is the integration API's answer: {"result","took",
// "requestId"} with 202, {"message","took","requestId"} (and for a 422
// "errors") otherwise.
type response struct {
	Result    string            `json:"result"`
	RequestID string            `json:"requestId"`
	Message   string            `json:"message"`
	Errors    map[string]string `json:"errors"`
}

// send posts r once (notify.Sender: 2xx is delivered; 408, 429, 5xx,
// network errors and timeouts are retryable, after Retry-After if sent;
// anything else is permanent, with the service's message).
func (n *Notifier) send(ctx context.Context, alias string, r apiRequest) error {
	// validAlias keeps the alias free of anything a path must escape.
	u := *n.alerts
	u.Path += r.Path
	u.RawQuery = r.Query
	h := http.Header{}
	h.Set("Authorization", "GenieKey "+n.key)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("User-Agent", "driftwatch-jsm/1")
	code, raw, err := n.sender.Send(ctx, notify.Request{Op: fmt.Sprintf("%s %q", r.Op, alias), URL: u.String(), Header: h, Body: r.Body,
		Describe: func(code int, raw []byte) error { return n.apiError(code, notify.Answer[response](raw)) }})
	if err == nil {
		n.logger.Debug("jsm accepted", "op", r.Op, "incident", alias, "status", code, "request_id", n.clean(notify.Answer[response](raw).RequestID, 100))
	}
	return err
}

// apiError is r as an error, redacted and bounded.
func (n *Notifier) apiError(code int, r response) *APIError {
	e := &APIError{StatusCode: code, Message: n.clean(r.Message, 300), ParenErrors: true}
	e.Errors = notify.Capped(slices.Sorted(maps.Keys(r.Errors)), 5, "… and %d more", func(k string) string { return n.clean(k+": "+r.Errors[k], 300) })
	return e
}

func (n *Notifier) clean(s string, limit int) string {
	return notify.CleanText(s, limit, n.redact)
}

// APIError is an error response from the integration API, redacted
// (notify.APIError): its message, then its field errors in parentheses.
type APIError = notify.APIError

// redact removes the API key from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.key) }
