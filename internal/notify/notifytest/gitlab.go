package notifytest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// GitLabServer is a local GitLab REST API v4 on an httptest TLS server on
// 127.0.0.1, holding one project (GitLabProjectID, GitLabProjectPath) and
// the endpoints a rolling-issue notifier uses:
//
//	GET  /api/v4/projects/:id/issues                   list (state, labels, search, in, order_by, sort, page, per_page)
//	POST /api/v4/projects/:id/issues                   create (201)
//	GET  /api/v4/projects/:id/issues/:iid              one issue
//	PUT  /api/v4/projects/:id/issues/:iid              edit (title, description, labels, add_labels, remove_labels, state_event)
//	GET  /api/v4/projects/:id/issues/:iid/notes        list (order_by, sort, page, per_page)
//	POST /api/v4/projects/:id/issues/:iid/notes        comment (201)
//
// :id is the numeric ID or the URL-encoded full path
// (platform%2Finfra%2Fdrift-alerts); an unencoded path matches no route
// (404 {"error":"404 Not Found"}), as on GitLab. Every request needs the
// PRIVATE-TOKEN header with Token (else 401 {"message":"401
// Unauthorized"}). Lists carry GitLab's offset pagination headers
// (X-Page, X-Per-Page, X-Total, X-Total-Pages, X-Next-Page, X-Prev-Page,
// Link). Like GitLab, edits add system notes ("changed title from ...",
// "changed the description", "closed", "reopened"), close on a closed
// issue and reopen on an open one change nothing, labels are created on
// first use, and errors are {"message": ...} or {"error": ...} bodies:
// 400 {"error":"title is missing"}, 400 {"message":{"title":["is too
// long (maximum is 255 characters)"]}}, 404 {"message":"404 Not
// found"} for an unknown issue, 404 {"message":"404 Project Not Found"}.
//
// Stricter than GitLab, where that catches bugs: a POST or PUT body must
// be JSON (GitLab also takes forms) without unknown fields (GitLab
// ignores them). Timestamps come from a clock that starts at
// 2026-11-03T10:00:00Z and ticks a second per change, so orders are
// deterministic.
//
// Recorded requests keep the escaped path (Request.Path is
// r.URL.EscapedPath(): /api/v4/projects/platform%2Finfra%2Fdrift-alerts/issues).
type GitLabServer struct {
	Faults

	// Token is the only token accepted: a canary that must never appear
	// in errors or logs.
	Token string
	// TokenFile holds Token (for Config.TokenFile).
	TokenFile string

	httpServer

	mu        sync.Mutex
	issues    []*GitLabIssue
	labels    []string
	nextID    int64
	nextNote  int64
	clock     time.Time
	lose      []glLose
	rateReset time.Time
	merges    glMerges // gitlab_merge.go
}

// The fake's project.
const (
	GitLabProjectID   = 4242
	GitLabProjectPath = "platform/infra/drift-alerts"
)

// The fake's user: the token's bot user (a project access token's).
const (
	gitlabBotID       = 77
	gitlabBotUsername = "project_4242_bot_5f2c"
)

// GitLabIssue is an issue as the server holds it.
type GitLabIssue struct {
	ID          int64
	IID         int64
	Title       string
	Description string
	// State is opened or closed.
	State     string
	Labels    []string
	CreatedAt time.Time
	UpdatedAt time.Time
	ClosedAt  time.Time
	Notes     []GitLabNote
}

// GitLabNote is a comment or a system note.
type GitLabNote struct {
	ID        int64
	Body      string
	System    bool
	CreatedAt time.Time
	// Author is the bot user's username for notes made through the API.
	Author string
}

// Comments are the issue's non-system notes, oldest first.
func (i GitLabIssue) Comments() []GitLabNote {
	var out []GitLabNote
	for _, n := range i.Notes {
		if !n.System {
			out = append(out, n)
		}
	}
	return out
}

// NewGitLabServer starts a server that lives until the test ends.
func NewGitLabServer(t testing.TB) *GitLabServer {
	t.Helper()
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	s := &GitLabServer{
		Token:      "glpat-canary" + hex.EncodeToString(b),
		nextID:     90000,
		clock:      time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC),
		httpServer: httpServer{log: requestLog{maxBody: 4 << 20, escaped: true}},
	}
	s.TokenFile = SecretFile(t, "gitlab-token", s.Token)
	s.start(t, &s.Faults, s.rateLimitWrap(s.Wrap(s.loseWrap(http.HandlerFunc(s.serve)))))
	return s
}

// URL is the instance's base URL (https://127.0.0.1:port), the value
// for the notifier's api_url.
func (s *GitLabServer) URL() string { return s.srv.URL }

// Secrets implements ServerControl.
func (s *GitLabServer) Secrets() []string { return []string{s.Token} }

// Issues returns copies of all issues, by iid.
func (s *GitLabServer) Issues() []GitLabIssue {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GitLabIssue, 0, len(s.issues))
	for _, i := range s.issues {
		out = append(out, glCopyIssue(i))
	}
	return out
}

// Issue returns a copy of the issue iid.
func (s *GitLabServer) Issue(iid int64) (GitLabIssue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.issue(iid); i != nil {
		return glCopyIssue(i), true
	}
	return GitLabIssue{}, false
}

// Labels are the project's labels, in order of creation.
func (s *GitLabServer) Labels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.labels)
}

// AddIssue creates an issue as a person would (no request recorded) and
// returns its iid.
func (s *GitLabServer) AddIssue(title, description string, labels []string, closed bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.newIssue(title, description, labels)
	if closed {
		i.State, i.ClosedAt = "closed", i.CreatedAt
	}
	return i.IID
}

// AddComment adds a person's comment to the issue iid.
func (s *GitLabServer) AddComment(iid int64, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.issue(iid); i != nil {
		s.addNote(i, body, false, "alice")
	}
}

// CloseIssue closes the issue iid as a person would (no request
// recorded).
func (s *GitLabServer) CloseIssue(iid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.issue(iid); i != nil && i.State == "opened" {
		i.State, i.ClosedAt = "closed", s.tick()
		s.addNote(i, "closed", true, "alice")
	}
}

// DeleteIssue deletes the issue iid, as an owner can.
func (s *GitLabServer) DeleteIssue(iid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issues = slices.DeleteFunc(s.issues, func(i *GitLabIssue) bool { return i.IID == iid })
}

// LoseNext handles the next request with method ("" any) whose escaped
// path ends with pathSuffix ("" any), once it gets past injected
// failures, but drops its response (the connection closes): a change
// GitLab made although the client saw an error, as after a timeout or a
// crash. Calls queue up.
func (s *GitLabServer) LoseNext(method, pathSuffix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose = append(s.lose, glLose{method: method, suffix: pathSuffix})
}

type glLose struct{ method, suffix string }

// SetRateLimitReset makes every response carry GitLab's RateLimit-*
// headers with RateLimit-Reset at t (zero: none).
func (s *GitLabServer) SetRateLimitReset(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateReset = t
}

func glCopyIssue(i *GitLabIssue) GitLabIssue {
	c := *i
	c.Labels = slices.Clone(i.Labels)
	c.Notes = slices.Clone(i.Notes)
	return c
}

// rateLimitWrap sets the RateLimit-* headers of SetRateLimitReset, on
// injected failures too.
func (s *GitLabServer) rateLimitWrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		reset := s.rateReset
		s.mu.Unlock()
		if !reset.IsZero() {
			h := w.Header()
			h.Set("RateLimit-Limit", "2000")
			h.Set("RateLimit-Observed", "2000")
			h.Set("RateLimit-Remaining", "0")
			h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
		}
		next.ServeHTTP(w, r)
	})
}

func (s *GitLabServer) loseWrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		i := slices.IndexFunc(s.lose, func(l glLose) bool {
			return (l.method == "" || l.method == r.Method) && strings.HasSuffix(r.URL.EscapedPath(), l.suffix)
		})
		lose := i >= 0
		if lose {
			s.lose = slices.Delete(s.lose, i, i+1)
		}
		s.mu.Unlock()
		if !lose {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler)
	})
}

// GitLab's limits.
const (
	glMaxTitle       = 255
	glMaxDescription = 1048576
	glMaxNote        = 1000000
	glMaxPerPage     = 100
)

func (s *GitLabServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("PRIVATE-TOKEN") != s.Token {
		glReply(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4/projects/")
	if !ok {
		glReply(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
		return
	}
	segs := strings.Split(rest, "/")
	if s.serveMerges(w, r, segs) {
		return
	}
	if len(segs) < 2 || segs[1] != "issues" || len(segs) > 4 || (len(segs) == 4 && segs[3] != "notes") {
		glReply(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
		return
	}
	pid, err := url.PathUnescape(segs[0])
	if err != nil || (pid != GitLabProjectPath && pid != strconv.Itoa(GitLabProjectID)) {
		glReply(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(segs) == 2 {
		switch r.Method {
		case http.MethodGet:
			s.listIssues(w, r)
		case http.MethodPost:
			s.createIssue(w, r)
		default:
			glReply(w, http.StatusMethodNotAllowed, map[string]any{"error": "405 Method Not Allowed"})
		}
		return
	}
	iid, err := strconv.ParseInt(segs[2], 10, 64)
	if err != nil {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "issue_iid is invalid"})
		return
	}
	issue := s.issue(iid)
	if issue == nil {
		glReply(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
		return
	}
	switch {
	case len(segs) == 3 && r.Method == http.MethodGet:
		glReply(w, http.StatusOK, s.issueJSON(issue))
	case len(segs) == 3 && r.Method == http.MethodPut:
		s.updateIssue(w, r, issue)
	case len(segs) == 4 && r.Method == http.MethodGet:
		s.listNotes(w, r, issue)
	case len(segs) == 4 && r.Method == http.MethodPost:
		s.createNote(w, r, issue)
	default:
		glReply(w, http.StatusMethodNotAllowed, map[string]any{"error": "405 Method Not Allowed"})
	}
}
