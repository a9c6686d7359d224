package github

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	gh "github.com/google/go-github/v75/github"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/github/githubcfg"
)

// Paging bounds: how far the notifier looks for an incident's issue and
// for a message's comment before deciding there is none.
const (
	perPage         = 100
	maxIssuePages   = 10 // 1000 issues of one class label
	maxCommentPages = 5  // 500 comments since the message's time
	// commentSkew is how long before the message's time a comment of it
	// may have been created, by GitHub's clock: it covers a daemon whose
	// clock runs ahead of GitHub's by up to this much.
	commentSkew = time.Hour
	// secondaryWait is how long to wait after a secondary rate limit that
	// names no time: GitHub asks for at least a minute.
	secondaryWait = time.Minute
)

// Issue states and the reason a resolve closes an issue with.
const (
	stateOpen       = "open"
	stateClosed     = "closed"
	reasonCompleted = "completed"
)

// staleError is a 404, 410 or 301 on an issue: the number no longer
// names an issue of the repository (deleted, transferred), so a number
// from the state is looked for again.
type staleError struct{ err error }

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

func isStale(err error) bool {
	var s *staleError
	return errors.As(err, &s)
}

// Notifier mirrors incidents as issues of one GitHub repository. It
// implements notify.Notifier.
type Notifier struct {
	name       string
	owner      string
	repo       string
	repository string // owner/repo, as the state records it
	labels     []string
	token      string
	timeout    time.Duration
	client     *gh.Client
	logger     *slog.Logger
	// now is the clock for rate-limit resets (a test seam).
	now func() time.Time
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the token file. It does no network I/O. hc
// (nil: a default client) is what requests go through (a proxy, a private
// CA, a test server); it is copied, and redirects are never followed,
// whatever hc says: the token is sent with every request.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	token, err := notify.Open("github", cfg.Name, logger, cfg.Validate, notify.Secret{Key: "token_file", Path: cfg.TokenFile,
		Want: "want one token on one line (printable ASCII, no spaces)",
		OK:   func(t string) bool { return strings.IndexFunc(t, notTokenRune) < 0 }})
	if err != nil {
		return nil, err
	}
	owner, repo, _ := githubcfg.ParseRepository(cfg.Repository) // Validate checked it

	c := notify.NoRedirectClient(hc)
	client := gh.NewClient(c).WithAuthToken(token)
	if cfg.APIURL != "" {
		u := apiURL(cfg.APIURL)
		if client, err = client.WithEnterpriseURLs(u, u); err != nil {
			return nil, fmt.Errorf("github %q: api_url: not a URL", cfg.Name)
		}
	}
	client.UserAgent = "driftwatch"
	// Every request goes to GitHub, which says whether it is limited: the
	// outbox, not the client, waits.
	client.DisableRateLimitCheck = true

	return &Notifier{
		name:       cfg.Name,
		owner:      owner,
		repo:       repo,
		repository: owner + "/" + repo,
		labels:     labels(cfg),
		token:      token,
		timeout:    cmp.Or(cfg.Timeout, DefaultTimeout),
		client:     client,
		logger:     logger.With("notifier", cfg.Name),
		now:        time.Now,
	}, nil
}

func notTokenRune(r rune) bool {
	return r > unicode.MaxASCII || !unicode.IsPrint(r) || unicode.IsSpace(r)
}

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// state is what the outbox keeps per incident: the incident's issue.
type state struct {
	Repository string `json:"repository"`
	Issue      int    `json:"issue"`
}

// issueOf is the issue number state records for this repository (0:
// none, unreadable, or another repository's).
func (n *Notifier) issueOf(b []byte) int {
	var s state
	if len(b) == 0 || json.Unmarshal(b, &s) != nil || s.Repository != n.repository || s.Issue <= 0 {
		return 0
	}
	return s.Issue
}

func (n *Notifier) stateFor(number int) []byte {
	b, _ := json.Marshal(state{Repository: n.repository, Issue: number})
	return b
}

// Notify implements notify.Notifier; see the package documentation for
// what each event does and what a resend or a crash replay does.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, st []byte, saveState func([]byte) error) ([]byte, error) {
	if err := checkMessage(m); err != nil {
		return st, fmt.Errorf("github %s: %w", n.name, err)
	}
	if err := notify.Interrupted(ctx, "github "+n.name); err != nil {
		return st, err
	}
	number := n.issueOf(st)
	if number > 0 {
		err := n.deliver(ctx, m, issueRef{number: number})
		if !isStale(err) {
			return n.stateFor(number), err
		}
		n.logger.Warn("the incident's issue is gone (deleted or transferred); looking for it again", "incident", m.Incident.Key, "issue", number)
	}
	ref, err := n.findOrCreate(ctx, m, saveState)
	switch {
	case err != nil:
		return st, err
	case ref.number == 0:
		return nil, nil // a resolve without an issue: nothing to remember
	}
	err = n.deliver(ctx, m, ref)
	var stale *staleError
	if errors.As(err, &stale) {
		err = stale.err // just found or created: not stale, something else
	}
	return n.stateFor(ref.number), err
}

// issueRef is the incident's issue: its number, and what the notifier
// knows of it (nil: nothing read in this call).
type issueRef struct {
	number  int
	current *gh.Issue
	// created: this call created it, with m's title and body and no
	// comment.
	created bool
}

// findOrCreate looks for the incident's issue by its marker and creates
// it if there is none, saving its number at once. A resolve of an
// incident without an issue creates none (number 0).
func (n *Notifier) findOrCreate(ctx context.Context, m notify.Message, saveState func([]byte) error) (issueRef, error) {
	iss, err := n.find(ctx, m.Incident)
	if err != nil {
		return issueRef{}, err
	}
	if iss != nil {
		if saveState != nil {
			if err := saveState(n.stateFor(iss.GetNumber())); err != nil {
				return issueRef{}, fmt.Errorf("github %s: issue #%d: %w", n.name, iss.GetNumber(), err)
			}
		}
		return issueRef{number: iss.GetNumber(), current: iss}, nil
	}
	if m.Event == notify.EventResolve {
		n.logger.Info("resolved incident has no issue; nothing to close", "incident", m.Incident.Key)
		return issueRef{}, nil
	}
	title, body := buildTitle(m), buildBody(m)
	labels := issueLabels(n.labels, m.Incident.Class)
	var created *gh.Issue
	err = n.call(ctx, "create issue for "+m.Incident.Key, func(ctx context.Context) (*gh.Response, error) {
		var resp *gh.Response
		var err error
		created, resp, err = n.client.Issues.Create(ctx, n.owner, n.repo, &gh.IssueRequest{Title: &title, Body: &body, Labels: &labels})
		return resp, err
	})
	if err != nil {
		return issueRef{}, err
	}
	number := created.GetNumber()
	if number <= 0 {
		return issueRef{}, fmt.Errorf("github %s: create issue for %s: the response names no issue number", n.name, m.Incident.Key)
	}
	n.logger.Info("issue created", "incident", m.Incident.Key, "issue", number)
	if !hasLabel(created, ClassLabel(m.Incident.Class)) {
		// GitHub drops the labels of a new issue, silently, when the
		// token may not set them.
		n.logger.Error("GitHub did not set the issue's labels (the token needs write access to the repository's issues and labels); "+
			"without its class label the issue cannot be found again, so a crash replay or the next incident after the state is pruned opens another",
			"incident", m.Incident.Key, "issue", number, "label", ClassLabel(m.Incident.Class))
	}
	// Before anything else can fail: a retry must find this issue.
	if saveState != nil {
		if err := saveState(n.stateFor(number)); err != nil {
			return issueRef{}, fmt.Errorf("github %s: issue #%d: %w", n.name, number, err)
		}
	}
	return issueRef{number: number, current: created, created: true}, nil
}

func hasLabel(is *gh.Issue, name string) bool {
	for _, l := range is.Labels {
		if strings.EqualFold(l.GetName(), name) {
			return true
		}
	}
	return false
}

// find returns the newest issue with the incident's class label and its
// marker, open or closed (nil: none).
func (n *Notifier) find(ctx context.Context, in notify.Incident) (*gh.Issue, error) {
	opts := &gh.IssueListByRepoOptions{
		State: "all", Labels: []string{ClassLabel(in.Class)}, Sort: "created", Direction: "desc",
		ListOptions: gh.ListOptions{PerPage: perPage},
	}
	for page := 0; page < maxIssuePages; page++ {
		var issues []*gh.Issue
		var next int
		err := n.call(ctx, "list issues", func(ctx context.Context) (*gh.Response, error) {
			var resp *gh.Response
			var err error
			issues, resp, err = n.client.Issues.ListByRepo(ctx, n.owner, n.repo, opts)
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, iss := range issues {
			if !iss.IsPullRequest() && hasIncidentMarker(iss.GetBody(), in.Key) {
				n.logger.Debug("found the incident's issue", "incident", in.Key, "issue", iss.GetNumber(), "state", iss.GetState())
				return iss, nil
			}
		}
		if next == 0 {
			return nil, nil
		}
		opts.ListOptions.Page = next
	}
	n.logger.Warn("no issue of the incident in the newest issues with its class label; creating one", "incident", in.Key,
		"label", ClassLabel(in.Class), "issues_read", maxIssuePages*perPage)
	return nil, nil
}

// deliver brings the issue up to date with m: for a resolve the closing
// comment, then the description and state closed; for any other event
// the description and state open, then the event's comment (none for
// open).
func (n *Notifier) deliver(ctx context.Context, m notify.Message, ref issueRef) error {
	title, body := buildTitle(m), buildBody(m)
	if m.Event == notify.EventResolve {
		if err := n.comment(ctx, m, ref); err != nil {
			return err
		}
		return n.edit(ctx, m, ref, title, body, stateClosed)
	}
	if !ref.created {
		if err := n.edit(ctx, m, ref, title, body, stateOpen); err != nil {
			return err
		}
	}
	return n.comment(ctx, m, ref)
}

// edit sets the issue's title, description and state, unless the issue
// as just read already has them.
func (n *Notifier) edit(ctx context.Context, m notify.Message, ref issueRef, title, body, st string) error {
	if c := ref.current; c != nil && c.GetTitle() == title && c.GetBody() == body && c.GetState() == st &&
		(st == stateOpen || c.GetStateReason() == reasonCompleted) {
		return nil
	}
	req := &gh.IssueRequest{Title: &title, Body: &body, State: gh.Ptr(st)}
	if st == stateClosed {
		req.StateReason = gh.Ptr(reasonCompleted)
	}
	op := fmt.Sprintf("update issue #%d", ref.number)
	if st == stateClosed {
		op = fmt.Sprintf("close issue #%d", ref.number)
	}
	var got *gh.Issue
	err := n.call(ctx, op, func(ctx context.Context) (*gh.Response, error) {
		var resp *gh.Response
		var err error
		got, resp, err = n.client.Issues.Edit(ctx, n.owner, n.repo, ref.number, req)
		return resp, err
	})
	if err != nil {
		return err
	}
	if ref.current != nil && ref.current.GetState() == stateClosed && st == stateOpen {
		n.logger.Info("issue reopened", "incident", m.Incident.Key, "issue", got.GetNumber())
	}
	return nil
}

// comment adds m's comment unless the issue already has it: a resend of
// the same message finds its marker among the comments since its time.
func (n *Notifier) comment(ctx context.Context, m notify.Message, ref issueRef) error {
	text, ok := buildComment(m)
	if !ok {
		return nil
	}
	if !ref.created {
		posted, err := n.commented(ctx, m, ref.number)
		if err != nil || posted {
			return err
		}
	}
	return n.call(ctx, fmt.Sprintf("comment on issue #%d", ref.number), func(ctx context.Context) (*gh.Response, error) {
		_, resp, err := n.client.Issues.CreateComment(ctx, n.owner, n.repo, ref.number, &gh.IssueComment{Body: &text})
		return resp, err
	})
}

// commented reports whether the issue has m's comment.
func (n *Notifier) commented(ctx context.Context, m notify.Message, number int) (bool, error) {
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: perPage}}
	if !m.At.IsZero() {
		opts.Since = gh.Ptr(m.At.UTC().Add(-commentSkew))
	}
	for page := 0; page < maxCommentPages; page++ {
		var comments []*gh.IssueComment
		var next int
		err := n.call(ctx, fmt.Sprintf("list comments of issue #%d", number), func(ctx context.Context) (*gh.Response, error) {
			var resp *gh.Response
			var err error
			comments, resp, err = n.client.Issues.ListComments(ctx, n.owner, n.repo, number, opts)
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return false, err
		}
		for _, c := range comments {
			if hasMessageMarker(c.GetBody(), m.ID) {
				n.logger.Info("message already commented; not commenting again", "incident", m.Incident.Key, "issue", number, "message_id", m.ID)
				return true, nil
			}
		}
		if next == 0 {
			return false, nil
		}
		opts.Page = next
	}
	return false, nil
}

// call makes one request, bounded by the notifier's timeout, and turns
// its failure into an error that says whether to retry, without the
// token or the request URL (notify.Sender.Attempt; an answer is
// classify's).
func (n *Notifier) call(ctx context.Context, op string, do func(context.Context) (*gh.Response, error)) error {
	s := notify.Sender{Prefix: "github " + n.name, Timeout: n.timeout, Redact: n.redact, Now: n.now}
	return s.Attempt(ctx, op, func(actx context.Context) (bool, error) {
		resp, err := do(actx)
		if err != nil && resp != nil && resp.Response != nil {
			return true, n.classify(op, resp.Response, err)
		}
		return false, err
	})
}

// classify turns a GitHub error response into the notifier's error: 403
// and 429 rate limits, 408 and 5xx are retryable (after Retry-After or
// the rate limit's reset); 404 and 410 on an issue are a stale issue;
// anything else is permanent.
func (n *Notifier) classify(op string, resp *http.Response, err error) error {
	apiErr := n.apiError(resp, err)
	wrapped := fmt.Errorf("github %s: %s: %w", n.name, op, apiErr)
	code := resp.StatusCode
	if limited, after := n.rateLimited(resp, apiErr.Message); limited {
		return notify.Retryable(wrapped, after)
	}
	switch {
	case code == http.StatusRequestTimeout || code >= 500:
		return notify.Retryable(wrapped, notify.ParseRetryAfter(resp.Header.Get("Retry-After"), n.now()))
	case (code == http.StatusNotFound || code == http.StatusGone || code == http.StatusMovedPermanently) && strings.Contains(op, "issue #"):
		return &staleError{err: wrapped}
	}
	return wrapped
}

// rateLimited reports whether a 403 or 429 is a rate limit, and after how
// long to retry: Retry-After, else X-RateLimit-Reset when
// X-RateLimit-Remaining is 0, else a minute for a secondary rate limit
// that names no time (a 429 without either: the outbox's backoff).
func (n *Notifier) rateLimited(resp *http.Response, message string) (bool, time.Duration) {
	code := resp.StatusCode
	if code != http.StatusForbidden && code != http.StatusTooManyRequests {
		return false, 0
	}
	h := resp.Header
	if v := h.Get("Retry-After"); v != "" {
		return true, notify.ParseRetryAfter(v, n.now())
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			if d := time.Unix(reset, 0).Sub(n.now()); d > 0 {
				return true, d.Round(time.Second)
			}
		}
		return true, 0
	}
	if code == http.StatusTooManyRequests {
		return true, 0
	}
	if strings.Contains(strings.ToLower(message), "secondary rate limit") {
		return true, secondaryWait
	}
	return false, 0
}

// APIError is an error response from GitHub's REST API, redacted
// (notify.APIError): GitHub's message, a 422's details (e.g.
// "missing_field title (Issue)") and, in parentheses, a hint.
type APIError = notify.APIError

// redirectHint is the hint of a 3xx answer.
const redirectHint = "redirects are not followed: if the repository was renamed or moved, set repository to its new name"

// hints say what to do about an answer a person must fix, by status.
var hints = map[int]string{
	http.StatusMovedPermanently:  redirectHint,
	http.StatusFound:             redirectHint,
	http.StatusSeeOther:          redirectHint,
	http.StatusTemporaryRedirect: redirectHint,
	http.StatusPermanentRedirect: redirectHint,
	http.StatusUnauthorized:      "check the token in token_file",
	http.StatusNotFound:          "the repository does not exist, or the token cannot see it",
}

// apiError reads GitHub's message from err (go-github's error types) or,
// failing that, from resp.
func (n *Notifier) apiError(resp *http.Response, err error) *APIError {
	e := &APIError{StatusCode: resp.StatusCode, Hint: hints[resp.StatusCode], ParenHint: true}
	var er *gh.ErrorResponse
	var rl *gh.RateLimitError
	var ab *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &er):
		e.Message = n.clean(er.Message, 300)
		e.Errors = notify.Capped(er.Errors, 5, "… and %d more", func(x gh.Error) string { return n.clean(fieldError(x), 300) })
	case errors.As(err, &rl):
		e.Message = n.clean(rl.Message, 300)
	case errors.As(err, &ab):
		e.Message = n.clean(ab.Message, 300)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// fieldError is one of a 422's details as GitHub words it.
func fieldError(x gh.Error) string {
	if x.Message != "" {
		return x.Message
	}
	s := x.Code
	if x.Field != "" {
		s += " " + x.Field
	}
	if x.Resource != "" {
		s += " (" + x.Resource + ")"
	}
	return s
}

func (n *Notifier) clean(s string, limit int) string {
	return notify.CleanText(s, limit, n.redact)
}

// redact removes the token from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.token) }
