package teams

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
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// maxResponse is how much of a response body is read.
const maxResponse = 64 << 10

// Notifier posts one Adaptive Card per message to a Workflows trigger.
// It implements notify.Notifier.
type Notifier struct {
	name    string
	url     string // the trigger URL: a secret
	timeout time.Duration
	hc      *http.Client
	logger  *slog.Logger
	// redactions are the URL and its parts, longest first: removed from
	// every error text.
	redactions []string
	// now is the clock for Retry-After dates (a test seam).
	now func() time.Time
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the trigger URL from its file. It does no
// network I/O. hc (nil: a default client) is what requests go through (a
// proxy, a private CA, a test server); it is copied, and redirects are
// never followed, whatever hc says: the body would go where it was not
// configured to.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	if logger == nil {
		return nil, errors.New("teams: logger is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("teams %q: %w", cfg.Name, err)
	}
	rawURL, err := notify.ReadSecretFile("webhook_url_file", cfg.WebhookURLFile, "want one URL on one line",
		func(u string) bool { return !strings.ContainsAny(u, " \t\r\n") })
	if err != nil {
		return nil, fmt.Errorf("teams %q: %w", cfg.Name, err)
	}
	u, err := checkWebhookURL(rawURL, cfg.WebhookURLFile)
	if err != nil {
		return nil, fmt.Errorf("teams %q: %w", cfg.Name, err)
	}

	c := notify.NoRedirectClient(hc)

	return &Notifier{
		name:       cfg.Name,
		url:        rawURL,
		timeout:    cmp.Or(cfg.Timeout, DefaultTimeout),
		hc:         c,
		logger:     logger.With("notifier", cfg.Name),
		redactions: redactions(rawURL, u),
		now:        time.Now,
	}, nil
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

// send posts body once and classifies the outcome: 2xx is accepted; 408,
// 429, 5xx, network errors and timeouts are retryable (after Retry-After
// if sent); anything else is permanent, with the service's error code and
// message (redacted).
func (n *Notifier) send(ctx context.Context, m notify.Message, body []byte) error {
	op := fmt.Sprintf("post %s card for %s", m.Event, m.Incident.Key)
	if ctx.Err() != nil {
		return notify.Retryable(fmt.Errorf("teams %s: %s: %w", n.name, op, context.Cause(ctx)), 0)
	}
	actx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("teams %s: %s: build request: %s", n.name, op, n.redact(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "driftwatch-teams/1")

	resp, err := n.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return notify.Retryable(fmt.Errorf("teams %s: %s: %w", n.name, op, context.Cause(ctx)), 0)
		}
		return notify.Retryable(fmt.Errorf("teams %s: %s: %s", n.name, op, n.transportError(err)), 0)
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	_ = resp.Body.Close()

	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		// Accepted by the flow, not yet posted: if the card never shows,
		// the flow's run history says why.
		n.logger.Debug("teams flow accepted the card", "incident", m.Incident.Key, "event", string(m.Event), "status", code, "bytes", len(body))
		return nil
	case code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code >= 500:
		return notify.Retryable(fmt.Errorf("teams %s: %s: %w", n.name, op, n.apiError(code, raw)),
			notify.ParseRetryAfter(resp.Header.Get("Retry-After"), n.now()))
	case code >= 300 && code < 400:
		return fmt.Errorf("teams %s: %s: status %d: redirects are not followed", n.name, op, code)
	}
	return fmt.Errorf("teams %s: %s: %w", n.name, op, n.apiError(code, raw))
}

// apiError is the response as an error, redacted and bounded, with a hint
// for the statuses that need a person.
func (n *Notifier) apiError(code int, raw []byte) *APIError {
	var b errorBody
	_ = json.Unmarshal(raw, &b) // an unreadable body leaves b empty
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

// APIError is an error response from the Workflows trigger, redacted.
type APIError struct {
	StatusCode int
	// Code is the body's error.code, e.g. "WorkflowNotFound".
	Code string
	// Message is the body's error.message.
	Message string
	// Hint says what to do, for statuses a person must fix.
	Hint string
}

// Error implements error.
func (e *APIError) Error() string {
	s := fmt.Sprintf("status %d", e.StatusCode)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += " [" + e.Hint + "]"
	}
	return s
}

// transportError describes err without the URL that *url.Error quotes.
func (n *Notifier) transportError(err error) string {
	return notify.TransportError(err, n.timeout, n.redact)
}

// redact removes the URL and its parts from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.redactions...) }
