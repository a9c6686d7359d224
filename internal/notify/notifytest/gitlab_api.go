package notifytest

// The GitLabServer's REST v4 endpoints: issues and notes, their JSON and
// pagination (gitlab.go holds the server, its controls and its routing).

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// glLabels is a labels parameter: a comma-separated string or an array.
type glLabels []string

func (l *glLabels) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = nil
		for p := range strings.SplitSeq(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				*l = append(*l, p)
			}
		}
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*l = a
	return nil
}

type glIssueParams struct {
	Title        *string   `json:"title"`
	Description  *string   `json:"description"`
	Labels       *glLabels `json:"labels"`
	AddLabels    *glLabels `json:"add_labels"`
	RemoveLabels *glLabels `json:"remove_labels"`
	StateEvent   *string   `json:"state_event"`
	Confidential *bool     `json:"confidential"`
}

// decode reads a JSON body strictly; false: it answered 400.
func glDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "Content-Type must be application/json (this fake)"})
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "invalid JSON body: " + err.Error() + " (this fake)"})
		return false
	}
	return true
}

func (s *GitLabServer) createIssue(w http.ResponseWriter, r *http.Request) {
	var p glIssueParams
	if !glDecode(w, r, &p) {
		return
	}
	if p.StateEvent != nil || p.AddLabels != nil || p.RemoveLabels != nil {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "state_event, add_labels and remove_labels are edit parameters (this fake)"})
		return
	}
	if p.Title == nil || strings.TrimSpace(*p.Title) == "" {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "title is missing"})
		return
	}
	desc := ""
	if p.Description != nil {
		desc = *p.Description
	}
	if msg := glCheckIssue(*p.Title, desc); msg != nil {
		glReply(w, http.StatusBadRequest, map[string]any{"message": msg})
		return
	}
	var labels []string
	if p.Labels != nil {
		labels = *p.Labels
	}
	i := s.newIssue(*p.Title, desc, labels)
	glReply(w, http.StatusCreated, s.issueJSON(i))
}

func glCheckIssue(title, desc string) map[string][]string {
	msg := map[string][]string{}
	if utf8.RuneCountInString(title) > glMaxTitle {
		msg["title"] = []string{fmt.Sprintf("is too long (maximum is %d characters)", glMaxTitle)}
	}
	if utf8.RuneCountInString(desc) > glMaxDescription {
		msg["description"] = []string{fmt.Sprintf("is too long (maximum is %d characters)", glMaxDescription)}
	}
	if len(msg) == 0 {
		return nil
	}
	return msg
}

func (s *GitLabServer) updateIssue(w http.ResponseWriter, r *http.Request, i *GitLabIssue) {
	var p glIssueParams
	if !glDecode(w, r, &p) {
		return
	}
	if p == (glIssueParams{}) {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "title, description, labels, add_labels, remove_labels, state_event, confidential are missing, at least one parameter must be provided"})
		return
	}
	if p.StateEvent != nil && *p.StateEvent != "close" && *p.StateEvent != "reopen" {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "state_event does not have a valid value"})
		return
	}
	title, desc := i.Title, i.Description
	if p.Title != nil {
		if strings.TrimSpace(*p.Title) == "" {
			glReply(w, http.StatusBadRequest, map[string]any{"message": map[string][]string{"title": {"can't be blank"}}})
			return
		}
		title = *p.Title
	}
	if p.Description != nil {
		desc = *p.Description
	}
	if msg := glCheckIssue(title, desc); msg != nil {
		glReply(w, http.StatusBadRequest, map[string]any{"message": msg})
		return
	}
	changed := false
	if title != i.Title {
		s.addNote(i, fmt.Sprintf("changed title from **%s** to **%s**", i.Title, title), true, gitlabBotUsername)
		i.Title, changed = title, true
	}
	if desc != i.Description {
		s.addNote(i, "changed the description", true, gitlabBotUsername)
		i.Description, changed = desc, true
	}
	labels := slices.Clone(i.Labels)
	if p.Labels != nil {
		labels = s.useLabels(*p.Labels)
	}
	if p.AddLabels != nil {
		for _, l := range s.useLabels(*p.AddLabels) {
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
	}
	if p.RemoveLabels != nil {
		labels = slices.DeleteFunc(labels, func(l string) bool { return slices.Contains(*p.RemoveLabels, l) })
	}
	slices.Sort(labels)
	if !slices.Equal(labels, i.Labels) {
		i.Labels, changed = labels, true
	}
	if p.StateEvent != nil {
		switch {
		case *p.StateEvent == "close" && i.State == "opened":
			i.State, i.ClosedAt = "closed", s.tick()
			s.addNote(i, "closed", true, gitlabBotUsername)
			changed = true
		case *p.StateEvent == "reopen" && i.State == "closed":
			i.State, i.ClosedAt = "opened", time.Time{}
			s.addNote(i, "reopened", true, gitlabBotUsername)
			changed = true
		}
	}
	if changed {
		i.UpdatedAt = s.tick()
	}
	glReply(w, http.StatusOK, s.issueJSON(i))
}

func (s *GitLabServer) createNote(w http.ResponseWriter, r *http.Request, i *GitLabIssue) {
	var p struct {
		Body     *string `json:"body"`
		Internal *bool   `json:"internal"`
	}
	if !glDecode(w, r, &p) {
		return
	}
	if p.Body == nil || strings.TrimSpace(*p.Body) == "" {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "body is missing"})
		return
	}
	if utf8.RuneCountInString(*p.Body) > glMaxNote {
		glReply(w, http.StatusBadRequest, map[string]any{"message": map[string][]string{"note": {fmt.Sprintf("is too long (maximum is %d characters)", glMaxNote)}}})
		return
	}
	n := s.addNote(i, *p.Body, false, gitlabBotUsername)
	glReply(w, http.StatusCreated, s.noteJSON(i, n))
}

func (s *GitLabServer) listIssues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "", "all", "opened", "closed":
	default:
		glReply(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	var want []string
	if v := q.Get("labels"); v != "" {
		want = strings.Split(v, ",")
	}
	search := strings.ToLower(q.Get("search"))
	in := q.Get("in")
	if in == "" {
		in = "title,description"
	}
	var out []*GitLabIssue
	for _, i := range s.issues {
		if state != "" && state != "all" && i.State != state {
			continue
		}
		if slices.ContainsFunc(want, func(l string) bool { return !slices.Contains(i.Labels, strings.TrimSpace(l)) }) {
			continue
		}
		if search != "" {
			hit := false
			for f := range strings.SplitSeq(in, ",") {
				switch strings.TrimSpace(f) {
				case "title":
					hit = hit || strings.Contains(strings.ToLower(i.Title), search)
				case "description":
					hit = hit || strings.Contains(strings.ToLower(i.Description), search)
				}
			}
			if !hit {
				continue
			}
		}
		out = append(out, i)
	}
	byUpdated := q.Get("order_by") == "updated_at"
	asc := q.Get("sort") == "asc"
	slices.SortStableFunc(out, func(a, b *GitLabIssue) int {
		ka, kb := a.CreatedAt, b.CreatedAt
		if byUpdated {
			ka, kb = a.UpdatedAt, b.UpdatedAt
		}
		c := ka.Compare(kb)
		if c == 0 {
			c = int(a.IID - b.IID)
		}
		if !asc {
			c = -c
		}
		return c
	})
	page := glPaginate(w, r, len(out))
	items := make([]map[string]any, 0, len(out))
	for _, i := range out[page.from:page.to] {
		items = append(items, s.issueJSON(i))
	}
	glReply(w, http.StatusOK, items)
}

func (s *GitLabServer) listNotes(w http.ResponseWriter, r *http.Request, i *GitLabIssue) {
	q := r.URL.Query()
	notes := slices.Clone(i.Notes)
	asc := q.Get("sort") == "asc"
	slices.SortStableFunc(notes, func(a, b GitLabNote) int {
		c := a.CreatedAt.Compare(b.CreatedAt)
		if c == 0 {
			c = int(a.ID - b.ID)
		}
		if !asc {
			c = -c
		}
		return c
	})
	page := glPaginate(w, r, len(notes))
	items := make([]map[string]any, 0, page.to-page.from)
	for _, n := range notes[page.from:page.to] {
		items = append(items, s.noteJSON(i, n))
	}
	glReply(w, http.StatusOK, items)
}

type glPage struct{ from, to int }

// glPaginate sets GitLab's offset pagination headers for total items and
// returns the page's range.
func glPaginate(w http.ResponseWriter, r *http.Request, total int) glPage {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, glMaxPerPage)
	pages := max((total+per-1)/per, 1)
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(per))
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "https", r.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < pages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		links = append(links, link(page+1, "next"))
	}
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(page-1))
		links = append(links, link(page-1, "prev"))
	}
	links = append(links, link(1, "first"), link(pages, "last"))
	h.Set("Link", strings.Join(links, ", "))
	from := min((page-1)*per, total)
	return glPage{from: from, to: min(from+per, total)}
}

// tick advances the clock a second and returns it. s.mu must be held.
func (s *GitLabServer) tick() time.Time {
	s.clock = s.clock.Add(time.Second)
	return s.clock
}

// newIssue adds an issue. s.mu must be held.
func (s *GitLabServer) newIssue(title, desc string, labels []string) *GitLabIssue {
	now := s.tick()
	s.nextID++
	var iid int64 = 1
	for _, i := range s.issues {
		iid = max(iid, i.IID+1)
	}
	i := &GitLabIssue{ID: s.nextID, IID: iid, Title: title, Description: desc, State: "opened", CreatedAt: now, UpdatedAt: now}
	i.Labels = s.useLabels(labels)
	slices.Sort(i.Labels)
	s.issues = append(s.issues, i)
	return i
}

// useLabels creates the labels that do not exist yet. s.mu must be held.
func (s *GitLabServer) useLabels(ls []string) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		l = strings.TrimSpace(l)
		if l == "" || slices.Contains(out, l) {
			continue
		}
		if !slices.Contains(s.labels, l) {
			s.labels = append(s.labels, l)
		}
		out = append(out, l)
	}
	return out
}

func (s *GitLabServer) issue(iid int64) *GitLabIssue {
	for _, i := range s.issues {
		if i.IID == iid {
			return i
		}
	}
	return nil
}

// addNote adds a note to i. s.mu must be held.
func (s *GitLabServer) addNote(i *GitLabIssue, body string, system bool, author string) GitLabNote {
	s.nextNote++
	n := GitLabNote{ID: 500000 + s.nextNote, Body: body, System: system, CreatedAt: s.tick(), Author: author}
	i.Notes = append(i.Notes, n)
	return n
}

func glTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func (s *GitLabServer) user(username string) map[string]any {
	id, name := gitlabBotID, "drift-alerts bot"
	if username != gitlabBotUsername {
		id, name = 12, strings.ToUpper(username[:1])+username[1:]
	}
	return map[string]any{
		"id": id, "username": username, "name": name, "state": "active", "locked": false,
		"avatar_url": "https://secure.gravatar.com/avatar/0?s=80&d=identicon",
		"web_url":    s.srv.URL + "/" + username,
	}
}

// issueJSON is i as GitLab's API shows an issue. s.mu must be held.
func (s *GitLabServer) issueJSON(i *GitLabIssue) map[string]any {
	web := fmt.Sprintf("%s/%s/-/issues/%d", s.srv.URL, GitLabProjectPath, i.IID)
	api := fmt.Sprintf("%s/api/v4/projects/%d/issues/%d", s.srv.URL, GitLabProjectID, i.IID)
	comments := 0
	for _, n := range i.Notes {
		if !n.System {
			comments++
		}
	}
	var closedBy any
	if i.State == "closed" {
		closedBy = s.user(gitlabBotUsername)
	}
	return map[string]any{
		"id": i.ID, "iid": i.IID, "project_id": GitLabProjectID,
		"title": i.Title, "description": i.Description, "state": i.State,
		"created_at": glTime(i.CreatedAt), "updated_at": glTime(i.UpdatedAt), "closed_at": glTime(i.ClosedAt),
		"closed_by": closedBy, "labels": slices.Concat([]string{}, i.Labels), "milestone": nil,
		"assignees": []any{}, "assignee": nil, "author": s.user(gitlabBotUsername),
		"type": "ISSUE", "issue_type": "issue", "user_notes_count": comments, "merge_requests_count": 0,
		"upvotes": 0, "downvotes": 0, "due_date": nil, "confidential": false, "discussion_locked": nil,
		"web_url": web, "severity": "UNKNOWN", "subscribed": true, "has_tasks": false,
		"time_stats":             map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"task_completion_status": map[string]any{"count": 0, "completed_count": 0},
		"references":             map[string]any{"short": fmt.Sprintf("#%d", i.IID), "relative": fmt.Sprintf("#%d", i.IID), "full": fmt.Sprintf("%s#%d", GitLabProjectPath, i.IID)},
		"_links": map[string]any{
			"self": api, "notes": api + "/notes", "award_emoji": api + "/award_emoji",
			"project": fmt.Sprintf("%s/api/v4/projects/%d", s.srv.URL, GitLabProjectID), "closed_as_duplicate_of": nil,
		},
		"moved_to_id": nil, "service_desk_reply_to": nil,
	}
}

func (s *GitLabServer) noteJSON(i *GitLabIssue, n GitLabNote) map[string]any {
	return map[string]any{
		"id": n.ID, "type": nil, "body": n.Body, "attachment": nil, "author": s.user(n.Author),
		"created_at": glTime(n.CreatedAt), "updated_at": glTime(n.CreatedAt), "system": n.System,
		"noteable_id": i.ID, "noteable_type": "Issue", "project_id": GitLabProjectID, "noteable_iid": i.IID,
		"resolvable": false, "confidential": false, "internal": false, "imported": false, "imported_from": "none",
		"commands_changes": map[string]any{},
	}
}

func glReply(w http.ResponseWriter, status int, body any) {
	writeJSON(w, status, "application/json", body)
}
