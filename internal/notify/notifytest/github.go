package notifytest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// GitHubServer is a local GitHub REST API (as GitHub Enterprise Server
// serves it, under /api/v3) on an httptest TLS server on 127.0.0.1, for
// one repository, Owner/Repo:
//
//	GET   /api/v3/repos/{owner}/{repo}/issues                   list issues (and pull requests)
//	POST  /api/v3/repos/{owner}/{repo}/issues                   create an issue
//	GET   /api/v3/repos/{owner}/{repo}/issues/{number}          get an issue
//	PATCH /api/v3/repos/{owner}/{repo}/issues/{number}          update an issue
//	GET   /api/v3/repos/{owner}/{repo}/issues/{number}/comments list an issue's comments
//	POST  /api/v3/repos/{owner}/{repo}/issues/{number}/comments create a comment
//
// As the service documents: requests need "Authorization: Bearer TOKEN"
// (or "token TOKEN"; else 401 {"message":"Bad credentials"}) and a
// User-Agent (else 403); another repository is a 404 {"message":"Not
// Found"}. Lists take per_page (default 30, at most 100) and page, and
// answer with a Link header (rel next, last, first, prev); the issue list
// filters by state (open by default, closed or all) and labels (a comma
// list, all must match), sorts by created, updated or comments, desc by
// default, and includes pull requests (with a pull_request key); the
// comment list is oldest first and filters by since (updated at or after
// it). Creating an issue needs a title and creates its labels; updating
// one changes only the fields sent, and state open/closed with
// state_reason (completed by default when closing, reopened when
// reopening, as the service sets it). Titles are at most 256 characters
// and bodies 65536 (422 Validation Failed, with the service's field
// error). A deleted issue is a 410 {"message":"This issue
// was deleted"}; DisableIssues makes every issue request a 410
// {"message":"Issues are disabled for this repo"}; DropLabels drops new
// issues' labels silently, as the service does for a token that may not
// set them. Every answer carries
// X-RateLimit-* headers; LimitNext answers one request with a primary or
// secondary rate limit as the service does.
//
// Stricter than the service, where that catches bugs: unknown fields in
// a request body are a 422, and so is an invalid query value (naming
// it). Messages are the service's
// where it documents them, illustrative otherwise.
type GitHubServer struct {
	Faults

	// Token is the only token accepted: a random canary that must never
	// appear in errors or logs.
	Token string
	// TokenFile holds Token (for Config.TokenFile).
	TokenFile string
	// Owner and Repo name the one repository served.
	Owner, Repo string

	httpServer

	mu        sync.Mutex
	issues    []*GitHubIssue
	commentID int64
	limits    []GitHubRateLimit
	failOn    []ghFailOn
	disabled  bool
	noLabels  bool
	remaining int
	pulls     ghPulls // github_pulls.go
	// now is the server's clock (time.Now), for timestamps.
	now func() time.Time
}

// GitHubIssue is an issue (or a pull request) as the server holds it.
type GitHubIssue struct {
	Number      int
	Title       string
	Body        string
	State       string // open or closed
	StateReason string // "", completed, not_planned, reopened, duplicate
	Labels      []string
	PullRequest bool
	Deleted     bool
	Comments    []GitHubComment
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time
	// Reopened counts the updates that reopened it.
	Reopened int
}

// GitHubComment is an issue comment.
type GitHubComment struct {
	ID        int64
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GitHubRateLimit is an injected rate-limit answer (see LimitNext).
type GitHubRateLimit struct {
	// Status is 403 or 429 (0: 403).
	Status int
	// Secondary answers with the secondary rate limit's message and
	// documentation URL; otherwise the primary limit's, with
	// X-RateLimit-Remaining: 0.
	Secondary bool
	// RetryAfter is sent as Retry-After if not empty.
	RetryAfter string
	// Reset is X-RateLimit-Reset (zero: an hour from now).
	Reset time.Time
}

// NewGitHubServer starts a server for the repository driftwatch-test/infra
// that lives until the test ends.
func NewGitHubServer(t testing.TB) *GitHubServer {
	t.Helper()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	s := &GitHubServer{
		Token: "github_pat_canary" + hex.EncodeToString(b),
		Owner: "driftwatch-test", Repo: "infra",
		remaining: 5000, now: time.Now,
		httpServer: httpServer{log: requestLog{maxBody: 1 << 20}},
	}
	s.TokenFile = SecretFile(t, "github-token", s.Token)
	s.start(t, &s.Faults, s.Wrap(http.HandlerFunc(s.serve)))
	return s
}

// URL is the API's base URL (https://127.0.0.1:port/api/v3/), the value
// for the notifier's api_url.
func (s *GitHubServer) URL() string { return s.srv.URL + "/api/v3/" }

// Repository is "owner/repo", the value for the notifier's repository.
func (s *GitHubServer) Repository() string { return s.Owner + "/" + s.Repo }

// Secrets implements ServerControl.
func (s *GitHubServer) Secrets() []string { return []string{s.Token} }

// Issues returns copies of all issues and pull requests, by number.
func (s *GitHubServer) Issues() []GitHubIssue {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GitHubIssue, 0, len(s.issues))
	for _, is := range s.issues {
		out = append(out, ghCopyIssue(is))
	}
	return out
}

// Issue returns a copy of issue number.
func (s *GitHubServer) Issue(number int) (GitHubIssue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if number < 1 || number > len(s.issues) {
		return GitHubIssue{}, false
	}
	return ghCopyIssue(s.issues[number-1]), true
}

func ghCopyIssue(is *GitHubIssue) GitHubIssue {
	c := *is
	c.Labels = slices.Clone(is.Labels)
	c.Comments = slices.Clone(is.Comments)
	return c
}

// Seed adds an issue (or pull request) as if someone had created it, and
// returns its number; an empty State is open.
func (s *GitHubServer) Seed(is GitHubIssue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.stamp()
	is.Number = len(s.issues) + 1
	if is.State == "" {
		is.State = "open"
	}
	is.CreatedAt, is.UpdatedAt = now, now
	is.Labels = slices.Clone(is.Labels)
	s.issues = append(s.issues, &is)
	return is.Number
}

// Close closes issue number as a person would (state_reason reason).
func (s *GitHubServer) Close(number int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[number-1]
	is.State, is.StateReason, is.ClosedAt = "closed", reason, s.stamp()
}

// Delete deletes issue number (GitHub answers 410 for it from then on,
// and lists it no more).
func (s *GitHubServer) Delete(number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issues[number-1].Deleted = true
}

// Edit changes issue number's body as a person would.
func (s *GitHubServer) Edit(number int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[number-1]
	is.Body, is.UpdatedAt = body, s.stamp()
}

// DisableIssues turns the repository's issues off (410 for every issue
// request) or on again.
func (s *GitHubServer) DisableIssues(disabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disabled = disabled
}

type ghFailOn struct {
	method, suffix string
	f              Failure
}

// FailOn answers the next request with method whose path ends in suffix
// with f instead of handling it: to fail a request in the middle of a
// delivery. Delay and dropped connections (Status -1) are not supported:
// use FailNext, Down or Up for those.
func (s *GitHubServer) FailOn(method, suffix string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failOn = append(s.failOn, ghFailOn{method: method, suffix: suffix, f: f})
}

// DropLabels makes the server drop the labels of new issues, silently,
// as GitHub does when the token may not set them.
func (s *GitHubServer) DropLabels(drop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noLabels = drop
}

// LimitNext answers the next request that passes Faults with l.
func (s *GitHubServer) LimitNext(l GitHubRateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, l)
}

// stamp is the server's time to the second, as GitHub's timestamps are.
// s.mu must be held.
func (s *GitHubServer) stamp() time.Time { return s.now().UTC().Truncate(time.Second) }

const (
	ghDocs     = "https://docs.github.com/rest"
	ghMaxBody  = 65536
	ghMaxTitle = 256
)

func (s *GitHubServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining = max(s.remaining-1, 0)
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(s.remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(5000-s.remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")

	auth := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(auth, " ")
	switch {
	case auth == "":
		ghReply(w, http.StatusUnauthorized, ghMessage("Requires authentication"))
		return
	case (scheme != "Bearer" && scheme != "token") || tok != s.Token:
		ghReply(w, http.StatusUnauthorized, ghMessage("Bad credentials"))
		return
	case r.UserAgent() == "":
		ghReply(w, http.StatusForbidden, ghMessage("Request forbidden by administrative rules. Please make sure your request has a User-Agent header"))
		return
	}
	for i, fo := range s.failOn {
		if r.Method == fo.method && strings.HasSuffix(r.URL.Path, fo.suffix) {
			s.failOn = append(s.failOn[:i], s.failOn[i+1:]...)
			s.fail(w, fo.f)
			return
		}
	}
	if len(s.limits) > 0 {
		l := s.limits[0]
		s.limits = s.limits[1:]
		s.limit(w, l)
		return
	}

	if s.servePulls(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v3/repos/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 3 || parts[2] != "issues" || len(parts) > 5 ||
		!strings.EqualFold(parts[0], s.Owner) || !strings.EqualFold(parts[1], s.Repo) {
		ghReply(w, http.StatusNotFound, ghMessage("Not Found"))
		return
	}
	if s.disabled {
		ghReply(w, http.StatusGone, ghMessage("Issues are disabled for this repo"))
		return
	}
	if len(parts) == 3 {
		switch r.Method {
		case http.MethodGet:
			s.listIssues(w, r)
		case http.MethodPost:
			s.createIssue(w, r)
		default:
			ghReply(w, http.StatusNotFound, ghMessage("Not Found"))
		}
		return
	}
	number, err := strconv.Atoi(parts[3])
	if err != nil || number < 1 || number > len(s.issues) || (len(parts) == 5 && parts[4] != "comments") {
		ghReply(w, http.StatusNotFound, ghMessage("Not Found"))
		return
	}
	is := s.issues[number-1]
	if is.Deleted {
		ghReply(w, http.StatusGone, ghMessage("This issue was deleted"))
		return
	}
	switch {
	case len(parts) == 4 && r.Method == http.MethodGet:
		ghReply(w, http.StatusOK, s.issueJSON(is))
	case len(parts) == 4 && r.Method == http.MethodPatch:
		s.editIssue(w, r, is)
	case len(parts) == 5 && r.Method == http.MethodGet:
		s.listComments(w, r, is)
	case len(parts) == 5 && r.Method == http.MethodPost:
		s.createComment(w, r, is)
	default:
		ghReply(w, http.StatusNotFound, ghMessage("Not Found"))
	}
}

// fail answers with f as Faults does.
func (s *GitHubServer) fail(w http.ResponseWriter, f Failure) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	body := f.Body
	if body == "" {
		body = fmt.Sprintf(`{"message":%q}`, http.StatusText(status))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// limit answers with a rate limit, as GitHub does. s.mu must be held.
func (s *GitHubServer) limit(w http.ResponseWriter, l GitHubRateLimit) {
	status := l.Status
	if status == 0 {
		status = http.StatusForbidden
	}
	if l.RetryAfter != "" {
		w.Header().Set("Retry-After", l.RetryAfter)
	}
	if l.Secondary {
		ghReply(w, status, map[string]any{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
		return
	}
	reset := l.Reset
	if reset.IsZero() {
		reset = s.now().Add(time.Hour)
	}
	w.Header().Set("X-RateLimit-Remaining", "0")
	w.Header().Set("X-RateLimit-Used", "5000")
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	ghReply(w, status, map[string]any{
		"message":           "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.",
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits",
	})
}
