package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxAnswer is how much of an answer's body a Sender reads.
const maxAnswer = 64 << 10

// Sender is how a notifier makes its HTTP requests: one attempt per call,
// bounded by Timeout, its outcome an error the outbox understands
// (Retryable or permanent), with no secret and no request URL in it. The
// outbox retries; a Sender never does. Notifiers that speak through a
// client library (github, gitlab) use Attempt and StatusError alone.
type Sender struct {
	// Prefix starts every error: the notifier, "jsm prod-pager".
	Prefix string
	// Client makes the request (NoRedirectClient: a credential is never
	// replayed to where a server points).
	Client *http.Client
	// Timeout bounds one attempt, the answer's body included.
	Timeout time.Duration
	// Redact removes the notifier's secrets from a text.
	Redact func(string) string
	// Now dates a Retry-After header given as an HTTP date.
	Now func() time.Time
}

// Request is one HTTP request of a Sender.
type Request struct {
	// Op names the request in errors: `create "drift-prod-3f9a"`.
	Op     string
	Method string // "" is POST
	URL    string
	Header http.Header
	Body   []byte
	// Describe turns a non-2xx answer's status and body into the error
	// it reports (redacted, bounded); nil: "status CODE".
	Describe func(code int, body []byte) error
}

// Send makes r once. A 2xx answer returns its status and body (at most
// 64 KiB). 408, 429, 5xx, a transport error, a timeout, a done ctx, and an
// answer that races the deadline or arrives cut short are retryable (after
// Retry-After when sent): every notifier that sends through it makes
// requests a resend keeps safe. A 3xx is permanent (redirects are not
// followed), and so is any other status.
func (s Sender) Send(ctx context.Context, r Request) (int, []byte, error) {
	var code int
	var body []byte
	var header http.Header
	err := s.Attempt(ctx, r.Op, func(actx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(actx, cmp.Or(r.Method, http.MethodPost), r.URL, bytes.NewReader(r.Body))
		if err != nil {
			return true, fmt.Errorf("%s: %s: build request: %s", s.Prefix, r.Op, s.Redact(err.Error()))
		}
		req.Header = r.Header
		resp, err := s.Client.Do(req)
		if err != nil {
			return false, err
		}
		code, header = resp.StatusCode, resp.Header
		var readErr error
		body, readErr = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		_ = resp.Body.Close()
		switch {
		case actx.Err() != nil: // ctx's own end is Attempt's to report
			return false, context.DeadlineExceeded
		case readErr != nil:
			return false, fmt.Errorf("status %d: reading the response: %s", code, TransportError(readErr, s.Timeout, s.Redact))
		}
		return false, nil
	})
	if err != nil {
		return code, nil, err
	}
	if code >= 200 && code < 300 {
		return code, body, nil
	}
	desc := fmt.Errorf("status %d", code)
	if r.Describe != nil {
		desc = r.Describe(code, body)
	}
	return code, nil, s.StatusError(r.Op, code, ParseRetryAfter(header.Get("Retry-After"), s.Now()), desc)
}

// Attempt runs do once under s.Timeout. A ctx done before the attempt,
// or by the end of a failed one, is retryable with ctx's cause. Else an
// error do returns as final is the outcome, returned as is (do classified
// it); any other is a failure without an answer (a transport error, a
// timeout): retryable, described without the URL. Errors read
// "PREFIX: OP: …".
func (s Sender) Attempt(ctx context.Context, op string, do func(context.Context) (final bool, err error)) error {
	if err := Interrupted(ctx, s.Prefix+": "+op); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	final, err := do(actx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return Interrupted(ctx, s.Prefix+": "+op)
	case final:
		return err
	}
	return Retryable(fmt.Errorf("%s: %s: %s", s.Prefix, op, TransportError(err, s.Timeout, s.Redact)), 0)
}

// Interrupted is nil while ctx is live; once it is done, it is the error
// of an attempt it ended or kept from starting: retryable (nothing was
// decided about the message), "PREFIX: CAUSE" with ctx's cause.
func Interrupted(ctx context.Context, prefix string) error {
	if ctx.Err() == nil {
		return nil
	}
	return Retryable(fmt.Errorf("%s: %w", prefix, context.Cause(ctx)), 0)
}

// Answer is a vendor's JSON answer read as T; an unreadable body is an
// empty one (a zero T): what it says is only ever a description.
func Answer[T any](raw []byte) T {
	var v T
	_ = json.Unmarshal(raw, &v)
	return v
}

// StatusError is a non-2xx answer as an error: 408, 429 and 5xx are
// retryable after the delay the server asked for; a 3xx is permanent
// (redirects are not followed), and so is anything else. desc describes
// the answer ("status 400: …").
func (s Sender) StatusError(op string, code int, after time.Duration, desc error) error {
	switch {
	case code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code >= 500:
		return Retryable(fmt.Errorf("%s: %s: %w", s.Prefix, op, desc), after)
	case code >= 300 && code < 400:
		return fmt.Errorf("%s: %s: status %d: redirects are not followed", s.Prefix, op, code)
	}
	return fmt.Errorf("%s: %s: %w", s.Prefix, op, desc)
}

// NewSender is the Sender of the notifier called name of type vendor:
// its requests go through a copy of hc (nil: a default client) that never
// follows a redirect, each bounded by timeout, and Retry-After dates are
// read against time.Now.
func NewSender(vendor, name string, hc *http.Client, timeout time.Duration, redact func(string) string) Sender {
	return Sender{Prefix: vendor + " " + name, Client: NoRedirectClient(hc), Timeout: timeout, Redact: redact, Now: time.Now}
}

// APIError is a vendor's error answer, redacted and bounded by the
// notifier that read it: "status 400 (CODE): MESSAGE: E1; E2 [HINT]",
// each part only when set; a vendor whose errors or hint read in
// parentheses, " (E1; E2)" or " (HINT)", says so in ParenErrors or
// ParenHint.
type APIError struct {
	StatusCode int
	// Code is the vendor's error type or code, e.g. "invalid event",
	// "WorkflowNotFound", "RequestNotProcessed".
	Code string
	// Message is the vendor's message.
	Message string
	// Errors are the answer's field errors or reasons.
	Errors []string
	// Hint says what to do, for statuses a person must fix.
	Hint string
	// ParenErrors and ParenHint put the errors and the hint in
	// parentheses, as the vendor's own form of the answer has them.
	ParenErrors, ParenHint bool
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
	if len(e.Errors) > 0 {
		s += enclose(": ", strings.Join(e.Errors, "; "), "", e.ParenErrors)
	}
	if e.Hint != "" {
		s += enclose(" [", e.Hint, "]", e.ParenHint)
	}
	return s
}

// enclose is open+s+end, or " ("+s+")" when paren.
func enclose(open, s, end string, paren bool) string {
	if paren {
		return " (" + s + ")"
	}
	return open + s + end
}
