package notifytest

// The GitHubServer's pull requests, as GitHub's REST API serves them
// (github.go routes to servePulls):
//
//	GET  /api/v3/repos/{owner}/{repo}/pulls                   list (state, head, base, per_page, page)
//	POST /api/v3/repos/{owner}/{repo}/pulls                   create (201)
//	POST /api/v3/repos/{owner}/{repo}/issues/{number}/labels  add labels to an issue or pull request
//
// A pull request is an issue too (one number space, listed by the issue
// list with a pull_request key), as on GitHub. Creating one needs title,
// head and base (422 missing_field), refuses head equal to base and a
// second open pull request of the same head into the same base (422 "A
// pull request already exists for OWNER:HEAD."), and, once KnowBranches
// is called, a branch it does not know (422 invalid field head or base).
// The list's head filter must be "owner:branch", GitHub's form (stricter
// than the service, which ignores another form: a 422 here). Adding
// labels takes GitHub's two body forms, ["a"] and {"labels": ["a"]}, and
// answers with all the issue's labels.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// GitHubPull is a pull request as the server holds it (its title, body,
// state and labels are its issue's).
type GitHubPull struct {
	Number      int
	Title, Body string
	State       string
	Head, Base  string
	Draft       bool
	Labels      []string
}

// ghPull is what a pull request adds to its issue.
type ghPull struct {
	head, base string
	draft      bool
}

// ghPulls is the server's pull requests and the branches it knows.
type ghPulls struct {
	byNumber map[int]*ghPull
	branches []string // nil: any branch exists
}

// Pulls returns copies of the pull requests opened through the API, by
// number.
func (s *GitHubServer) Pulls() []GitHubPull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []GitHubPull
	for _, is := range s.issues {
		if p := s.pulls.byNumber[is.Number]; p != nil {
			out = append(out, GitHubPull{Number: is.Number, Title: is.Title, Body: is.Body, State: is.State,
				Head: p.head, Base: p.base, Draft: p.draft, Labels: slices.Clone(is.Labels)})
		}
	}
	return out
}

// KnowBranches makes the repository's branches exactly names: a pull
// request of another head or into another base is refused (422).
func (s *GitHubServer) KnowBranches(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pulls.branches = append([]string{}, names...)
}

// servePulls answers the pull request routes (false: r is not one of
// them). s.mu must be held.
func (s *GitHubServer) servePulls(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v3/repos/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 3 || !strings.EqualFold(parts[0], s.Owner) || !strings.EqualFold(parts[1], s.Repo) {
		return false
	}
	switch {
	case len(parts) == 3 && parts[2] == "pulls" && r.Method == http.MethodGet:
		s.listPulls(w, r)
	case len(parts) == 3 && parts[2] == "pulls" && r.Method == http.MethodPost:
		s.createPull(w, r)
	case len(parts) == 5 && parts[2] == "issues" && parts[4] == "labels" && r.Method == http.MethodPost:
		number, err := strconv.Atoi(parts[3])
		if err != nil || number < 1 || number > len(s.issues) || s.issues[number-1].Deleted {
			ghReply(w, http.StatusNotFound, ghMessage("Not Found"))
			return true
		}
		s.addLabels(w, r, s.issues[number-1])
	default:
		return false
	}
	return true
}

// listPulls is GET .../pulls. s.mu must be held.
func (s *GitHubServer) listPulls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := ghValueOr(q.Get("state"), "open")
	perPage, page, bad := ghPageParams(q)
	if !slices.Contains([]string{"open", "closed", "all"}, state) {
		bad = append(bad, "state")
	}
	head := q.Get("head")
	headOwner, headRef, headOK := strings.Cut(head, ":")
	if head != "" && (!headOK || headOwner == "" || headRef == "") {
		bad = append(bad, "head")
	}
	if len(bad) > 0 {
		ghInvalid(w, "PullRequest", bad...)
		return
	}
	var out []*GitHubIssue
	for _, is := range s.issues {
		p := s.pulls.byNumber[is.Number]
		switch {
		case p == nil || is.Deleted || (state != "all" && is.State != state):
		case head != "" && (!strings.EqualFold(headOwner, s.Owner) || p.head != headRef):
		case q.Get("base") != "" && p.base != q.Get("base"):
		default:
			out = append(out, is)
		}
	}
	slices.Reverse(out) // newest first, GitHub's default
	items := make([]any, 0, perPage)
	for _, is := range ghPaginate(out, perPage, page) {
		items = append(items, s.pullJSON(is))
	}
	s.link(w, r, len(out), perPage, page)
	ghReply(w, http.StatusOK, items)
}

// createPull is POST .../pulls. s.mu must be held.
func (s *GitHubServer) createPull(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Title               *string `json:"title"`
		Head                *string `json:"head"`
		HeadRepo            *string `json:"head_repo"`
		Base                *string `json:"base"`
		Body                *string `json:"body"`
		Issue               *int    `json:"issue"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
		Draft               *bool   `json:"draft"`
	}
	if !ghDecode(w, r, &req) {
		return
	}
	var missing []map[string]string
	for field, v := range map[string]*string{"base": req.Base, "head": req.Head, "title": req.Title} {
		if v == nil || strings.TrimSpace(*v) == "" {
			missing = append(missing, map[string]string{"resource": "PullRequest", "code": "missing_field", "field": field})
		}
	}
	if len(missing) > 0 {
		slices.SortFunc(missing, func(a, b map[string]string) int { return strings.Compare(a["field"], b["field"]) })
		ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": ghDocs + "/pulls/pulls#create-a-pull-request", "status": "422", "errors": missing})
		return
	}
	head := *req.Head
	if owner, ref, ok := strings.Cut(head, ":"); ok && strings.EqualFold(owner, s.Owner) {
		head = ref
	}
	var invalid []string
	if s.pulls.branches != nil && !slices.Contains(s.pulls.branches, *req.Base) {
		invalid = append(invalid, "base")
	}
	if s.pulls.branches != nil && !slices.Contains(s.pulls.branches, head) {
		invalid = append(invalid, "head")
	}
	if len(invalid) > 0 {
		ghInvalid(w, "PullRequest", invalid...)
		return
	}
	custom := func(msg string) {
		ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": ghDocs + "/pulls/pulls#create-a-pull-request", "status": "422",
			"errors": []map[string]string{{"resource": "PullRequest", "code": "custom", "message": msg}}})
	}
	if head == *req.Base {
		custom("No commits between " + *req.Base + " and " + head)
		return
	}
	for _, is := range s.issues {
		if p := s.pulls.byNumber[is.Number]; p != nil && is.State == "open" && !is.Deleted && p.head == head && p.base == *req.Base {
			custom("A pull request already exists for " + s.Owner + ":" + head + ".")
			return
		}
	}
	if !s.checkText(w, "PullRequest", "title", *req.Title, ghMaxTitle) ||
		req.Body != nil && !s.checkText(w, "PullRequest", "body", *req.Body, ghMaxBody) {
		return
	}
	now := s.stamp()
	is := &GitHubIssue{Number: len(s.issues) + 1, Title: *req.Title, State: "open", PullRequest: true, CreatedAt: now, UpdatedAt: now}
	if req.Body != nil {
		is.Body = *req.Body
	}
	s.issues = append(s.issues, is)
	if s.pulls.byNumber == nil {
		s.pulls.byNumber = map[int]*ghPull{}
	}
	s.pulls.byNumber[is.Number] = &ghPull{head: head, base: *req.Base, draft: req.Draft != nil && *req.Draft}
	w.Header().Set("Location", s.apiURL(fmt.Sprintf("pulls/%d", is.Number)))
	ghReply(w, http.StatusCreated, s.pullJSON(is))
}

// addLabels is POST .../issues/{number}/labels. s.mu must be held.
func (s *GitHubServer) addLabels(w http.ResponseWriter, r *http.Request, is *GitHubIssue) {
	body, _ := io.ReadAll(r.Body)
	var labels []string
	if json.Unmarshal(body, &labels) != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&obj); err != nil || obj.Labels == nil {
			ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Invalid request.\n\nFor 'links/0/schema', " + strconv.Quote(string(body)) + " is not an array or an object with labels.",
				"documentation_url": ghDocs + "/issues/labels#add-labels-to-an-issue", "status": "422"})
			return
		}
		labels = obj.Labels
	}
	for _, l := range labels {
		if !s.noLabels && !slices.ContainsFunc(is.Labels, func(h string) bool { return strings.EqualFold(h, l) }) {
			is.Labels = append(is.Labels, l)
		}
	}
	is.UpdatedAt = s.stamp()
	ghReply(w, http.StatusOK, s.issueJSON(is)["labels"])
}

// pullJSON is a pull request as GitHub's API shows it. s.mu must be
// held.
func (s *GitHubServer) pullJSON(is *GitHubIssue) map[string]any {
	p := s.pulls.byNumber[is.Number]
	issue := s.issueJSON(is)
	repo := map[string]any{"id": 1296269, "name": s.Repo, "full_name": s.Owner + "/" + s.Repo, "private": true,
		"html_url": s.srv.URL + "/" + s.Owner + "/" + s.Repo, "url": s.srv.URL + "/api/v3/repos/" + s.Owner + "/" + s.Repo}
	branch := func(ref string) map[string]any {
		return map[string]any{"label": s.Owner + ":" + ref, "ref": ref, "sha": fmt.Sprintf("%040x", len(ref)), "user": ghUser, "repo": repo}
	}
	return map[string]any{
		"id": 80000 + is.Number, "node_id": "PR_kwDOA" + strconv.Itoa(is.Number), "number": is.Number,
		"url":       s.apiURL(fmt.Sprintf("pulls/%d", is.Number)),
		"html_url":  s.htmlURL(fmt.Sprintf("pull/%d", is.Number)),
		"diff_url":  s.htmlURL(fmt.Sprintf("pull/%d.diff", is.Number)),
		"issue_url": s.apiURL(fmt.Sprintf("issues/%d", is.Number)),
		"state":     is.State, "locked": false, "title": is.Title, "body": is.Body, "user": ghUser,
		"labels": issue["labels"], "milestone": nil, "assignee": nil, "assignees": []any{}, "requested_reviewers": []any{},
		"created_at": ghTime(is.CreatedAt), "updated_at": ghTime(is.UpdatedAt), "closed_at": ghTime(is.ClosedAt), "merged_at": nil,
		"head": branch(p.head), "base": branch(p.base), "draft": p.draft, "merged": false, "mergeable": nil,
		"author_association": "NONE", "auto_merge": nil,
	}
}
