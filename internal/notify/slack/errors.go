package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// Slack error codes that mean "try again later". Every other code
// (invalid_auth, channel_not_found, not_in_channel, invalid_blocks, …) is
// permanent: retrying cannot fix a revoked token or a malformed message.
var retryableCodes = map[string]bool{
	"ratelimited":         true,
	"rate_limited":        true,
	"internal_error":      true,
	"fatal_error":         true,
	"service_unavailable": true,
	"request_timeout":     true,
	"team_added_to_org":   true,
}

// Codes meaning the stored parent message no longer exists or cannot be
// edited: a new parent is posted instead.
var parentGoneCodes = map[string]bool{
	"message_not_found":   true,
	"cant_update_message": true,
	"edit_window_closed":  true,
}

var (
	codePattern = regexp.MustCompile(`^[a-z0-9_.]{1,64}$`)
	codePrefix  = regexp.MustCompile(`^[a-z0-9_]{1,64}`)
	// OAuth scopes Slack says a method needs, e.g. "channels:history".
	scopePattern = regexp.MustCompile(`^[a-z][a-z0-9:._,]{0,200}$`)
	// Any Slack token or webhook path, in case a server echoes one that is
	// not ours (a rotated token, another instance's webhook).
	tokenPattern = regexp.MustCompile(`xox[a-z]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+`)
	hookPattern  = regexp.MustCompile(`/services/[A-Za-z0-9_/-]+`)
)

const redacted = "[redacted]"

// redactor removes secrets from strings before they reach an error or a log.
type redactor struct{ secrets []string }

// newRedactor knows each secret verbatim and in the encodings a server may
// echo it in (form, path and JSON escaping), and for a URL also its path,
// which is the secret part of a webhook URL.
func newRedactor(secrets ...string) redactor {
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= 6 {
			seen[s] = true
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		if b, err := json.Marshal(s); err == nil {
			add(strings.Trim(string(b), `"`))
		}
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			add(u.Host + u.Path)
			add(u.EscapedPath())
			add(u.RawQuery)
		}
	}
	r := redactor{}
	for s := range seen {
		r.secrets = append(r.secrets, s)
	}
	// Longest first, so a URL goes before its own path.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

func (r redactor) redact(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	s = tokenPattern.ReplaceAllString(s, redacted)
	return hookPattern.ReplaceAllString(s, "/services/"+redacted)
}

// code returns a Slack error code fit for an error string: the code itself,
// or its leading code word when the server added more (which may echo a
// secret), never the rest.
func code(s string) string {
	if codePattern.MatchString(s) {
		return s
	}
	if c := codePrefix.FindString(s); c != "" {
		return c + " (details omitted)"
	}
	return "unrecognised error (details omitted)"
}

// slackCode is the Slack error code of err ("" if err is not an ok:false
// response).
func slackCode(err error) string {
	var se slackgo.SlackErrorResponse
	if errors.As(err, &se) {
		return codePrefix.FindString(se.Err)
	}
	return ""
}

// classify turns an error from slack-go or net/http into a secret-free
// error for the outbox: notify.Retryable for rate limits, 5xx, network
// errors and timeouts, a plain error otherwise. ctx is the request's
// context. Raw library errors are never wrapped: a *url.Error carries the
// URL (a secret in webhook mode) and an ok:false response may echo input.
func (n *Notifier) classify(ctx context.Context, op string, err error) error {
	if done := notify.Interrupted(ctx, op); done != nil {
		// The cause is ours (errRequestTimeout) or the caller's.
		return done
	}
	var rl *slackgo.RateLimitedError
	if errors.As(err, &rl) {
		return notify.Retryable(fmt.Errorf("%s: rate limited, retry after %s", op, rl.RetryAfter), rl.RetryAfter)
	}
	var sc slackgo.StatusCodeError
	if errors.As(err, &sc) {
		return httpStatusError(op, sc.Code, "", retryAfter(ctx))
	}
	var se slackgo.SlackErrorResponse
	if errors.As(err, &se) {
		c := code(se.Err)
		msg := op + ": " + n.redact.redact(c)
		if scopePattern.MatchString(se.Needed) {
			msg += " (needs scope " + se.Needed + ")"
		}
		if retryableCodes[codePrefix.FindString(se.Err)] {
			return notify.Retryable(errors.New(msg), 0)
		}
		return errors.New(msg)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return notify.Retryable(fmt.Errorf("%s: request timed out", op), 0)
		}
		return notify.Retryable(fmt.Errorf("%s: %s", op, n.redact.redact(ue.Err.Error())), 0)
	}
	// Anything else (a body that is not JSON, a reset mid-body) is a
	// transport problem, not Slack's verdict on the message.
	return notify.Retryable(fmt.Errorf("%s: %s", op, n.redact.redact(err.Error())), 0)
}

// httpStatusError classifies a non-200 HTTP answer: 429, 408 and 5xx are
// retryable, other statuses permanent. detail is a sanitised Slack code.
func httpStatusError(op string, status int, detail string, retryAfter time.Duration) error {
	msg := fmt.Sprintf("%s: HTTP %d", op, status)
	if detail != "" {
		msg += ": " + detail
	}
	if status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500 {
		return notify.Retryable(errors.New(msg), retryAfter)
	}
	return errors.New(msg)
}
