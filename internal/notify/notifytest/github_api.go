package notifytest

// The GitHubServer's REST endpoints: issues and comments, their JSON and
// pagination (github.go holds the server, its controls and its routing).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// listIssues is GET .../issues. s.mu must be held.
func (s *GitHubServer) listIssues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := ghValueOr(q.Get("state"), "open")
	sortBy := ghValueOr(q.Get("sort"), "created")
	dir := ghValueOr(q.Get("direction"), "desc")
	var bad []string
	if !slices.Contains([]string{"open", "closed", "all"}, state) {
		bad = append(bad, "state")
	}
	if !slices.Contains([]string{"created", "updated", "comments"}, sortBy) {
		bad = append(bad, "sort")
	}
	if !slices.Contains([]string{"asc", "desc"}, dir) {
		bad = append(bad, "direction")
	}
	perPage, page, badPage := ghPageParams(q)
	bad = append(bad, badPage...)
	if len(bad) > 0 {
		ghInvalid(w, "Issue", bad...)
		return
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var out []*GitHubIssue
	for _, is := range s.issues {
		if is.Deleted || (state != "all" && is.State != state) {
			continue
		}
		if !ghHasAllLabels(is.Labels, want) {
			continue
		}
		out = append(out, is)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		var less bool
		switch sortBy {
		case "updated":
			less = a.UpdatedAt.Before(b.UpdatedAt) || a.UpdatedAt.Equal(b.UpdatedAt) && a.Number < b.Number
		case "comments":
			less = len(a.Comments) < len(b.Comments) || len(a.Comments) == len(b.Comments) && a.Number < b.Number
		default:
			less = a.Number < b.Number
		}
		if dir == "desc" {
			return !less
		}
		return less
	})
	items := make([]any, 0, perPage)
	for _, is := range ghPaginate(out, perPage, page) {
		items = append(items, s.issueJSON(is))
	}
	s.link(w, r, len(out), perPage, page)
	ghReply(w, http.StatusOK, items)
}

// createIssue is POST .../issues. s.mu must be held.
func (s *GitHubServer) createIssue(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Title     *string  `json:"title"`
		Body      *string  `json:"body"`
		Labels    []string `json:"labels"`
		Assignees []string `json:"assignees"`
		Assignee  *string  `json:"assignee"`
		Milestone *int     `json:"milestone"`
		Type      *string  `json:"type"`
	}
	if !ghDecode(w, r, &req) {
		return
	}
	switch {
	case req.Title == nil || strings.TrimSpace(*req.Title) == "":
		ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": ghDocs + "/issues/issues#create-an-issue", "status": "422",
			"errors": []map[string]string{{"resource": "Issue", "code": "missing_field", "field": "title"}}})
		return
	case !s.checkText(w, "Issue", "title", *req.Title, ghMaxTitle):
		return
	case req.Body != nil && !s.checkText(w, "Issue", "body", *req.Body, ghMaxBody):
		return
	}
	now := s.stamp()
	is := &GitHubIssue{Number: len(s.issues) + 1, Title: *req.Title, State: "open", CreatedAt: now, UpdatedAt: now}
	if req.Body != nil {
		is.Body = *req.Body
	}
	for _, l := range req.Labels {
		if !s.noLabels && !slices.Contains(is.Labels, l) {
			is.Labels = append(is.Labels, l)
		}
	}
	s.issues = append(s.issues, is)
	w.Header().Set("Location", s.apiURL(fmt.Sprintf("issues/%d", is.Number)))
	ghReply(w, http.StatusCreated, s.issueJSON(is))
}

// editIssue is PATCH .../issues/{number}. s.mu must be held.
func (s *GitHubServer) editIssue(w http.ResponseWriter, r *http.Request, is *GitHubIssue) {
	var req struct {
		Title       *string   `json:"title"`
		Body        *string   `json:"body"`
		State       *string   `json:"state"`
		StateReason *string   `json:"state_reason"`
		Labels      *[]string `json:"labels"`
		Assignees   []string  `json:"assignees"`
		Assignee    *string   `json:"assignee"`
		Milestone   *int      `json:"milestone"`
		Type        *string   `json:"type"`
	}
	if !ghDecode(w, r, &req) {
		return
	}
	if req.Title != nil && !s.checkText(w, "Issue", "title", *req.Title, ghMaxTitle) ||
		req.Body != nil && !s.checkText(w, "Issue", "body", *req.Body, ghMaxBody) {
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		ghInvalid(w, "Issue", "state")
		return
	}
	if req.StateReason != nil && !slices.Contains([]string{"completed", "not_planned", "reopened", "duplicate"}, *req.StateReason) {
		ghInvalid(w, "Issue", "state_reason")
		return
	}
	now := s.stamp()
	if req.Title != nil {
		is.Title = *req.Title
	}
	if req.Body != nil {
		is.Body = *req.Body
	}
	if req.Labels != nil {
		is.Labels = slices.Clone(*req.Labels)
	}
	switch {
	case req.State != nil && *req.State == "closed":
		if is.State != "closed" {
			is.ClosedAt = now
		}
		is.State, is.StateReason = "closed", "completed"
		if req.StateReason != nil {
			is.StateReason = *req.StateReason
		}
	case req.State != nil && *req.State == "open" && is.State == "closed":
		is.State, is.StateReason, is.ClosedAt = "open", "reopened", time.Time{}
		is.Reopened++
	}
	is.UpdatedAt = now
	ghReply(w, http.StatusOK, s.issueJSON(is))
}

// listComments is GET .../issues/{number}/comments. s.mu must be held.
func (s *GitHubServer) listComments(w http.ResponseWriter, r *http.Request, is *GitHubIssue) {
	q := r.URL.Query()
	perPage, page, bad := ghPageParams(q)
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad = append(bad, "since")
		}
		since = t
	}
	if len(bad) > 0 {
		ghInvalid(w, "IssueComment", bad...)
		return
	}
	var out []GitHubComment
	for _, c := range is.Comments {
		if !c.UpdatedAt.Before(since) {
			out = append(out, c)
		}
	}
	items := make([]any, 0, perPage)
	for _, c := range ghPaginate(out, perPage, page) {
		items = append(items, s.commentJSON(is, c))
	}
	s.link(w, r, len(out), perPage, page)
	ghReply(w, http.StatusOK, items)
}

// createComment is POST .../issues/{number}/comments. s.mu must be held.
func (s *GitHubServer) createComment(w http.ResponseWriter, r *http.Request, is *GitHubIssue) {
	var req struct {
		Body *string `json:"body"`
	}
	if !ghDecode(w, r, &req) {
		return
	}
	if req.Body == nil || strings.TrimSpace(*req.Body) == "" {
		ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": ghDocs + "/issues/comments#create-an-issue-comment", "status": "422",
			"errors": []map[string]string{{"resource": "IssueComment", "code": "missing_field", "field": "body"}}})
		return
	}
	if utf8.RuneCountInString(*req.Body) > ghMaxBody {
		// The service's words for a comment differ from an issue's.
		ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": ghDocs + "/issues/comments#create-an-issue-comment", "status": "422",
			"errors": []map[string]string{{"resource": "IssueComment", "code": "unprocessable", "field": "data",
				"message": fmt.Sprintf("Body is too long (maximum is %d characters)", ghMaxBody)}}})
		return
	}
	s.commentID++
	now := s.stamp()
	c := GitHubComment{ID: 1000 + s.commentID, Body: *req.Body, CreatedAt: now, UpdatedAt: now}
	is.Comments = append(is.Comments, c)
	is.UpdatedAt = now
	w.Header().Set("Location", s.apiURL(fmt.Sprintf("issues/comments/%d", c.ID)))
	ghReply(w, http.StatusCreated, s.commentJSON(is, c))
}

// checkText answers 422 if v is longer than limit characters.
func (s *GitHubServer) checkText(w http.ResponseWriter, resource, field, v string, limit int) bool {
	if utf8.RuneCountInString(v) <= limit {
		return true
	}
	ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "documentation_url": ghDocs, "status": "422",
		"errors": []map[string]string{{"resource": resource, "code": "custom", "field": field,
			"message": fmt.Sprintf("%s is too long (maximum is %d characters)", field, limit)}}})
	return false
}

func (s *GitHubServer) apiURL(sub string) string {
	return s.srv.URL + "/api/v3/repos/" + s.Owner + "/" + s.Repo + "/" + sub
}

func (s *GitHubServer) htmlURL(sub string) string {
	return s.srv.URL + "/" + s.Owner + "/" + s.Repo + "/" + sub
}

var ghUser = map[string]any{"login": "driftwatch-bot", "id": 4242, "node_id": "U_kgDOAAAQkg", "type": "User", "site_admin": false}

func ghTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *GitHubServer) issueJSON(is *GitHubIssue) map[string]any {
	labels := make([]map[string]any, 0, len(is.Labels))
	for i, l := range is.Labels {
		labels = append(labels, map[string]any{"id": 9000 + i, "node_id": "LA_" + strconv.Itoa(i), "url": s.apiURL("labels/" + url.PathEscape(l)),
			"name": l, "color": "ededed", "default": false, "description": nil})
	}
	kind := "issues"
	if is.PullRequest {
		kind = "pull"
	}
	m := map[string]any{
		"id": 70000 + is.Number, "node_id": "I_kwDOA" + strconv.Itoa(is.Number), "number": is.Number,
		"url":            s.apiURL(fmt.Sprintf("issues/%d", is.Number)),
		"repository_url": s.srv.URL + "/api/v3/repos/" + s.Owner + "/" + s.Repo,
		"labels_url":     s.apiURL(fmt.Sprintf("issues/%d/labels{/name}", is.Number)),
		"comments_url":   s.apiURL(fmt.Sprintf("issues/%d/comments", is.Number)),
		"events_url":     s.apiURL(fmt.Sprintf("issues/%d/events", is.Number)),
		"html_url":       s.htmlURL(fmt.Sprintf("%s/%d", kind, is.Number)),
		"title":          is.Title, "body": is.Body, "state": is.State, "user": ghUser,
		"labels": labels, "assignee": nil, "assignees": []any{}, "milestone": nil, "locked": false,
		"comments": len(is.Comments), "created_at": ghTime(is.CreatedAt), "updated_at": ghTime(is.UpdatedAt),
		"closed_at": ghTime(is.ClosedAt), "author_association": "NONE", "state_reason": nil,
	}
	if is.StateReason != "" {
		m["state_reason"] = is.StateReason
	}
	if is.PullRequest {
		m["pull_request"] = map[string]any{"url": s.apiURL(fmt.Sprintf("pulls/%d", is.Number)), "html_url": m["html_url"]}
	}
	return m
}

func (s *GitHubServer) commentJSON(is *GitHubIssue, c GitHubComment) map[string]any {
	return map[string]any{
		"id": c.ID, "node_id": "IC_kwDOA" + strconv.FormatInt(c.ID, 10),
		"url":       s.apiURL(fmt.Sprintf("issues/comments/%d", c.ID)),
		"html_url":  s.htmlURL(fmt.Sprintf("issues/%d#issuecomment-%d", is.Number, c.ID)),
		"issue_url": s.apiURL(fmt.Sprintf("issues/%d", is.Number)),
		"body":      c.Body, "user": ghUser, "created_at": ghTime(c.CreatedAt), "updated_at": ghTime(c.UpdatedAt),
		"author_association": "NONE",
	}
}

// link sets the Link header of a page of total items, as GitHub does.
func (s *GitHubServer) link(w http.ResponseWriter, r *http.Request, total, perPage, page int) {
	last := max((total+perPage-1)/perPage, 1)
	ref := func(p int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.srv.URL, r.URL.Path, q.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, ref(page-1, "prev"), ref(1, "first"))
	}
	if page < last {
		links = append(links, ref(page+1, "next"), ref(last, "last"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
}

func ghPageParams(q url.Values) (perPage, page int, bad []string) {
	perPage, page = 30, 1
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad = append(bad, "per_page")
		}
		perPage = min(max(n, 1), 100)
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad = append(bad, "page")
		}
		page = max(n, 1)
	}
	return perPage, page, bad
}

func ghPaginate[T any](xs []T, perPage, page int) []T {
	from := min((page-1)*perPage, len(xs))
	return xs[from:min(from+perPage, len(xs))]
}

func ghHasAllLabels(have, want []string) bool {
	for _, l := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, l) }) {
			return false
		}
	}
	return true
}

func ghValueOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ghDecode reads a JSON request body, answering 400 or 422 if it is not
// one.
func ghDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Invalid request.\n\n" + err.Error() + " (this fake refuses unknown fields)", "documentation_url": ghDocs, "status": "422"})
			return false
		}
		ghReply(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON", "documentation_url": ghDocs, "status": "400"})
		return false
	}
	return true
}

func ghMessage(msg string) map[string]any {
	return map[string]any{"message": msg, "documentation_url": ghDocs}
}

func ghInvalid(w http.ResponseWriter, resource string, fields ...string) {
	var errs []map[string]string
	for _, f := range fields {
		errs = append(errs, map[string]string{"resource": resource, "code": "invalid", "field": f})
	}
	ghReply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": errs, "documentation_url": ghDocs, "status": "422"})
}

func ghReply(w http.ResponseWriter, status int, body any) {
	writeJSON(w, status, "application/json; charset=utf-8", body)
}
