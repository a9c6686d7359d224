package gitlab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// Lookup bounds.
const (
	findPerPage  = 20  // issues per page when finding an incident's issue
	findMaxPages = 5   // pages of issues looked at
	notesPerPage = 100 // most recent notes looked at before posting one
)

// Notifier keeps one rolling GitLab issue per incident key in one
// project. It implements notify.Notifier.
type Notifier struct {
	name    string
	project string
	labels  []string
	token   string
	timeout time.Duration
	api     *gl.Client
	logger  *slog.Logger
	// now is the clock for Retry-After dates and RateLimit-Reset (a test
	// seam).
	now func() time.Time
}

var _ notify.Notifier = (*Notifier)(nil)

// New validates cfg and reads the token file. It does no network I/O. hc
// (nil: a default client) is what requests go through (a proxy, a private
// CA, a test server); it is copied, and redirects are never followed,
// whatever hc says: the token travels in a header. The client library's
// own retries and rate limiter are off: the outbox retries.
func New(cfg Config, hc *http.Client, logger *slog.Logger) (*Notifier, error) {
	token, err := notify.Open("gitlab", cfg.Name, logger, cfg.Validate, notify.Secret{Key: "token_file", Path: cfg.TokenFile,
		Want: "want one access token (printable ASCII, no spaces) on one line",
		OK:   func(t string) bool { return len(t) <= 1024 && strings.IndexFunc(t, notTokenRune) < 0 }})
	if err != nil {
		return nil, err
	}
	base := baseURL(cfg)

	c := notify.NoRedirectClient(hc)

	log := logger.With("notifier", cfg.Name)
	api, err := gl.NewClient(token,
		gl.WithBaseURL(base),
		gl.WithHTTPClient(c),
		gl.WithoutRetries(),
		gl.WithCustomRetryMax(0),
		gl.WithCustomLimiter(noLimit{}),
		gl.WithUserAgent("driftwatch-gitlab/1"),
		gl.WithURLWarningLogger(log),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab %q: client: %s", cfg.Name, strings.ReplaceAll(err.Error(), token, "[REDACTED]"))
	}
	return &Notifier{
		name:    cfg.Name,
		project: cfg.Project,
		labels:  labels(cfg),
		token:   token,
		timeout: cmp.Or(cfg.Timeout, DefaultTimeout),
		api:     api,
		logger:  log,
		now:     time.Now,
	}, nil
}

func notTokenRune(r rune) bool {
	return r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' '
}

// noLimit turns the client library's rate limiter off (it paces requests
// by the RateLimit-* headers of the first answer): one Notify makes a few
// requests, and a 429 goes back to the outbox with its delay.
type noLimit struct{}

func (noLimit) Wait(ctx context.Context) error { return ctx.Err() }

// Name implements notify.Notifier.
func (n *Notifier) Name() string { return n.name }

// state is what the notifier stores per incident key: the issue, in which
// project, and whether driftwatch closed it. It outlives an incident: the
// next incident of the key reopens the same issue.
type state struct {
	Project string `json:"project"`
	IID     int64  `json:"iid"`
	Closed  bool   `json:"closed,omitempty"`
}

func (s state) encode() []byte {
	b, _ := json.Marshal(s) // cannot fail: a string, an int and a bool
	return b
}

// issueRef is the issue a delivery works on.
type issueRef struct {
	IID    int64
	Closed bool
	// Fresh says this delivery created it: it has no notes to look at.
	Fresh bool
	// Stored says it came from the stored state (it may be gone since).
	Stored bool
}

// Notify implements notify.Notifier. The issue comes from state, or else
// is found by its incident marker, or else is created (and saved with
// saveState at once); then its title, description and labels are
// rewritten in place (reopened on open, closed on resolve) and a note is
// added unless a note of m is among the issue's recent notes. A resolve
// with no issue to close does nothing. The returned state names the issue.
func (n *Notifier) Notify(ctx context.Context, m notify.Message, st []byte, saveState func([]byte) error) ([]byte, error) {
	if err := checkMessage(m); err != nil {
		return st, fmt.Errorf("gitlab %s: %w", n.name, err)
	}
	if err := notify.Interrupted(ctx, "gitlab "+n.name); err != nil {
		return st, err
	}
	if saveState == nil {
		saveState = func([]byte) error { return nil }
	}
	log := n.logger.With("incident_key", m.Incident.Key, "message_id", m.ID, "event", string(m.Event))
	ref := n.decodeState(log, st)
	for {
		if ref == nil {
			var err error
			if ref, err = n.findOrCreate(ctx, log, m, saveState); err != nil {
				return st, err
			}
			if ref == nil {
				log.Info("no issue to close")
				return nil, nil
			}
		}
		reopened, err := n.updateIssue(ctx, m, *ref)
		if errors.Is(err, errGone) {
			// Only for a stored issue, so this looks up at most once.
			log.Warn("the stored issue is gone; looking for another", "iid", ref.IID)
			ref = nil
			continue
		}
		if err != nil {
			return st, err
		}
		if note := buildNote(m, reopened); note != "" {
			if err := n.addNote(ctx, log, m, *ref, note); err != nil {
				return st, err
			}
		}
		return state{Project: n.project, IID: ref.IID, Closed: m.Event == notify.EventResolve}.encode(), nil
	}
}

// decodeState is the stored issue, or nil: none stored, unreadable, or in
// another project (the config changed).
func (n *Notifier) decodeState(log *slog.Logger, b []byte) *issueRef {
	if len(b) == 0 {
		return nil
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil || s.IID <= 0 {
		// The marker lookup still finds the issue.
		log.Warn("ignoring unreadable notifier state")
		return nil
	}
	if s.Project != n.project {
		log.Info("stored issue is in another project; looking in this one", "stored_project", s.Project)
		return nil
	}
	return &issueRef{IID: s.IID, Closed: s.Closed, Stored: true}
}

// findOrCreate finds the incident's issue by its marker or creates it,
// and saves it as the state before anything else can fail. nil: a resolve
// found no issue.
func (n *Notifier) findOrCreate(ctx context.Context, log *slog.Logger, m notify.Message, saveState func([]byte) error) (*issueRef, error) {
	ref, err := n.find(ctx, m)
	if err != nil {
		return nil, err
	}
	if ref == nil {
		if m.Event == notify.EventResolve {
			return nil, nil
		}
		if ref, err = n.create(ctx, m); err != nil {
			return nil, err
		}
		log.Info("created issue", "iid", ref.IID)
	} else {
		log.Info("found the incident's issue", "iid", ref.IID, "closed", ref.Closed)
	}
	if err := saveState(state{Project: n.project, IID: ref.IID, Closed: ref.Closed}.encode()); err != nil {
		// Retryable: the issue exists and the retry's lookup finds it,
		// so retrying cannot duplicate it.
		return nil, notify.Retryable(fmt.Errorf("gitlab %s: save state: %w", n.name, err), 0)
	}
	return ref, nil
}

// find lists the project's issues with the class label whose title or
// description has the incident key, and returns the one whose
// description carries the incident marker: an open one first, else the
// most recent.
func (n *Notifier) find(ctx context.Context, m notify.Message) (*issueRef, error) {
	marker := incidentMarker(m.Incident.Key)
	opt := &gl.ListProjectIssuesOptions{
		ListOptions: gl.ListOptions{PerPage: findPerPage, Page: 1},
		State:       gl.Ptr("all"),
		Labels:      &gl.LabelOptions{ClassLabel(m.Incident.Class)},
		Search:      gl.Ptr(m.Incident.Key),
		In:          gl.Ptr("description"),
		OrderBy:     gl.Ptr("created_at"),
		Sort:        gl.Ptr("desc"),
	}
	var closed *issueRef
	for range findMaxPages {
		var issues []*gl.Issue
		var resp *gl.Response
		err := n.call(ctx, "find the issue of "+m.Incident.Key, func(o gl.RequestOptionFunc) (*gl.Response, error) {
			var err error
			issues, resp, err = n.api.Issues.ListProjectIssues(n.project, opt, o)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, is := range issues {
			if is == nil || !strings.Contains(is.Description, marker) {
				continue
			}
			if is.State != "closed" {
				return &issueRef{IID: is.IID}, nil
			}
			if closed == nil {
				closed = &issueRef{IID: is.IID, Closed: true}
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return closed, nil
}

func (n *Notifier) create(ctx context.Context, m notify.Message) (*issueRef, error) {
	opt := &gl.CreateIssueOptions{
		Title:       gl.Ptr(issueTitle(m.Incident)),
		Description: gl.Ptr(buildDescription(m)),
		Labels:      (*gl.LabelOptions)(gl.Ptr(issueLabels(n.labels, m.Incident.Class))),
	}
	var is *gl.Issue
	err := n.call(ctx, "create the issue of "+m.Incident.Key, func(o gl.RequestOptionFunc) (*gl.Response, error) {
		var resp *gl.Response
		var err error
		is, resp, err = n.api.Issues.CreateIssue(n.project, opt, o)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	if is == nil || is.IID <= 0 {
		return nil, notify.Retryable(fmt.Errorf("gitlab %s: create the issue of %s: no issue iid in the answer", n.name, m.Incident.Key), 0)
	}
	return &issueRef{IID: is.IID, Fresh: true}, nil
}

// errGone marks a 404 on an issue the stored state named.
var errGone = errors.New("issue not found")

// updateIssue rewrites the issue for m: title, description, labels, and
// its state: reopened by an open, closed by a resolve. reopened reports an
// open of an issue that was closed. A fresh issue is left alone: it was
// just created from m.
func (n *Notifier) updateIssue(ctx context.Context, m notify.Message, ref issueRef) (bool, error) {
	if ref.Fresh {
		return false, nil
	}
	opt := &gl.UpdateIssueOptions{
		Title:       gl.Ptr(issueTitle(m.Incident)),
		Description: gl.Ptr(buildDescription(m)),
		AddLabels:   (*gl.LabelOptions)(gl.Ptr(issueLabels(n.labels, m.Incident.Class))),
	}
	reopened := false
	switch {
	case m.Event == notify.EventResolve:
		opt.StateEvent = gl.Ptr("close")
	case m.Event == notify.EventOpen && ref.Closed:
		opt.StateEvent = gl.Ptr("reopen")
		reopened = true
	}
	op := fmt.Sprintf("update %s#%d", n.project, ref.IID)
	err := n.call(ctx, op, func(o gl.RequestOptionFunc) (*gl.Response, error) {
		_, resp, err := n.api.Issues.UpdateIssue(n.project, ref.IID, opt, o)
		return resp, err
	})
	var ae *APIError
	if ref.Stored && errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		return false, errGone
	}
	return reopened, err
}

// addNote posts note on the issue unless one of its most recent notes
// carries m's marker (an earlier attempt posted it). A fresh issue has no
// notes to look at.
func (n *Notifier) addNote(ctx context.Context, log *slog.Logger, m notify.Message, ref issueRef, note string) error {
	marker := messageMarker(m.ID)
	if !ref.Fresh {
		var notes []*gl.Note
		err := n.call(ctx, fmt.Sprintf("list the notes of %s#%d", n.project, ref.IID), func(o gl.RequestOptionFunc) (*gl.Response, error) {
			var resp *gl.Response
			var err error
			notes, resp, err = n.api.Notes.ListIssueNotes(n.project, ref.IID, &gl.ListIssueNotesOptions{
				ListOptions: gl.ListOptions{PerPage: notesPerPage},
				OrderBy:     gl.Ptr("created_at"),
				Sort:        gl.Ptr("desc"),
			}, o)
			return resp, err
		})
		if err != nil {
			return err
		}
		for _, x := range notes {
			if x != nil && !x.System && strings.Contains(x.Body, marker) {
				log.Info("note already posted", "iid", ref.IID, "note_id", x.ID)
				return nil
			}
		}
	}
	return n.call(ctx, fmt.Sprintf("comment on %s#%d", n.project, ref.IID), func(o gl.RequestOptionFunc) (*gl.Response, error) {
		_, resp, err := n.api.Notes.CreateIssueNote(n.project, ref.IID, &gl.CreateIssueNoteOptions{Body: gl.Ptr(note)}, o)
		return resp, err
	})
}

// call makes one API request under the per-request timeout
// (notify.Sender) and classifies its outcome: 2xx is done; 408, 429, 5xx,
// network errors and timeouts are retryable (after Retry-After, or
// RateLimit-Reset, when sent); anything else is permanent, with GitLab's
// message (redacted, bounded).
func (n *Notifier) call(ctx context.Context, op string, do func(gl.RequestOptionFunc) (*gl.Response, error)) error {
	s := notify.Sender{Prefix: "gitlab " + n.name, Timeout: n.timeout, Redact: n.redact, Now: n.now}
	return s.Attempt(ctx, op, func(actx context.Context) (bool, error) {
		resp, err := guard(do, gl.WithContext(actx))
		switch {
		case errors.Is(err, errMalformed):
			// The request may have had its effect: the retry's lookups
			// find it.
			return true, notify.Retryable(fmt.Errorf("gitlab %s: %s: %w", n.name, op, err), 0)
		case err == nil || resp == nil || resp.Response == nil:
			return false, err
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			// Likewise: the retry's lookups find its effect.
			return true, notify.Retryable(fmt.Errorf("gitlab %s: %s: status %d: unreadable answer", n.name, op, resp.StatusCode), 0)
		}
		return true, s.StatusError(op, resp.StatusCode, n.retryAfter(resp.Header), n.apiError(resp.StatusCode, err))
	})
}

// errMalformed is an answer the client library could not decode.
var errMalformed = errors.New("unreadable answer")

// guard runs do, turning a panic of the client library into errMalformed:
// it panics decoding an issue without an "id" (a proxy's answer, say),
// which must not end the daemon.
func guard(do func(gl.RequestOptionFunc) (*gl.Response, error), o gl.RequestOptionFunc) (resp *gl.Response, err error) {
	defer func() {
		if recover() != nil {
			resp, err = nil, errMalformed
		}
	}()
	return do(o)
}

// retryAfter is the delay a 429 or 5xx asks for: Retry-After, or else
// the time until RateLimit-Reset (Unix seconds).
func (n *Notifier) retryAfter(h http.Header) time.Duration {
	now := n.now()
	if d := notify.ParseRetryAfter(h.Get("Retry-After"), now); d > 0 {
		return d
	}
	if v := strings.TrimSpace(h.Get("RateLimit-Reset")); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			if d := time.Unix(s, 0).Sub(now); d > 0 {
				return d.Round(time.Second)
			}
		}
	}
	return 0
}

// APIError is an error answer of the GitLab API, redacted
// (notify.APIError): GitLab's message, e.g. "401 Unauthorized" or "title
// is too long (maximum is 255 characters)", and, in parentheses, a hint.
type APIError = notify.APIError

// hints say what to do about an answer a person must fix, by status.
var hints = map[int]string{
	http.StatusUnauthorized: "is the token valid and unexpired?",
	http.StatusForbidden:    "does the token have the api scope and at least the Reporter role?",
	http.StatusNotFound:     "does the project exist, and can the token see it?",
}

// apiError reads GitLab's message from err's body: {"message": "..."},
// {"message": {"field": ["..."]}}, {"message": ["..."]} or {"error":
// "...", "error_description": "..."}. A 404's body is not kept by the
// client library.
func (n *Notifier) apiError(code int, err error) *APIError {
	e := &APIError{StatusCode: code, Hint: hints[code], ParenHint: true}
	var er *gl.ErrorResponse
	if !errors.As(err, &er) || len(er.Body) == 0 {
		return e
	}
	var body struct {
		Message          any    `json:"message"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal(er.Body, &body) != nil {
		return e
	}
	var parts []string
	if s := flatten(body.Message); s != "" {
		parts = append(parts, s)
	}
	if body.Error != "" {
		parts = append(parts, body.Error)
	}
	if body.ErrorDescription != "" {
		parts = append(parts, body.ErrorDescription)
	}
	e.Message = n.clean(strings.Join(parts, ": "), 500)
	return e
}

// flatten turns GitLab's message shapes into one line: field errors as
// "field message", sorted by field.
func flatten(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var out []string
		for i, e := range x {
			if i == 5 {
				out = append(out, fmt.Sprintf("… and %d more", len(x)-5))
				break
			}
			if s := flatten(e); s != "" {
				out = append(out, s)
			}
		}
		return strings.Join(out, "; ")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var out []string
		for _, k := range keys {
			if s := flatten(x[k]); s != "" {
				out = append(out, k+" "+s)
			}
		}
		return strings.Join(out, "; ")
	}
	return ""
}

func (n *Notifier) clean(s string, limit int) string {
	return notify.CleanText(s, limit, n.redact)
}

// redact removes the token from s.
func (n *Notifier) redact(s string) string { return notify.Redact(s, n.token) }
