package notifytest

// The GitLabServer's merge requests, as GitLab's REST API v4 serves them
// (gitlab.go routes to serveMerges):
//
//	GET  /api/v4/projects/:id/merge_requests   list (state, source_branch, target_branch, page, per_page)
//	POST /api/v4/projects/:id/merge_requests   create (201)
//
// :id as for issues: the numeric ID or the URL-encoded path. Merge
// requests number their iids apart from issues, as on GitLab. Creating
// one needs title, source_branch and target_branch (400 {"error":"title
// is missing"}), takes labels as a comma list or an array (created on
// first use), refuses the same branch as source and target (422) and a
// second opened merge request of the same source into the same target
// (409 {"message":["Another open merge request already exists for this
// source branch: !IID"]}), and, once KnowBranches is called, a branch it
// does not know (400 {"message":{"source_branch":["does not exist"]}}).

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GitLabMerge is a merge request as the server holds it.
type GitLabMerge struct {
	ID, IID                    int64
	Title, Description         string
	State                      string // opened, closed or merged
	SourceBranch, TargetBranch string
	Labels                     []string
	RemoveSourceBranch, Squash bool
	CreatedAt, UpdatedAt       time.Time
}

// glMerges is the server's merge requests and the branches it knows.
type glMerges struct {
	all      []*GitLabMerge
	branches []string // nil: any branch exists
}

// MergeRequests returns copies of the merge requests, by iid.
func (s *GitLabServer) MergeRequests() []GitLabMerge {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GitLabMerge, 0, len(s.merges.all))
	for _, m := range s.merges.all {
		c := *m
		c.Labels = slices.Clone(m.Labels)
		out = append(out, c)
	}
	return out
}

// KnowBranches makes the project's branches exactly names: a merge
// request from or into another is refused (400).
func (s *GitLabServer) KnowBranches(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.merges.branches = append([]string{}, names...)
}

// serveMerges answers the merge request routes (false: segs, the escaped
// path's segments after /api/v4/projects/, are not one of them).
func (s *GitLabServer) serveMerges(w http.ResponseWriter, r *http.Request, segs []string) bool {
	if len(segs) != 2 || segs[1] != "merge_requests" {
		return false
	}
	pid, err := url.PathUnescape(segs[0])
	if err != nil || (pid != GitLabProjectPath && pid != strconv.Itoa(GitLabProjectID)) {
		glReply(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		s.listMerges(w, r)
	case http.MethodPost:
		s.createMerge(w, r)
	default:
		glReply(w, http.StatusMethodNotAllowed, map[string]any{"error": "405 Method Not Allowed"})
	}
	return true
}

func (s *GitLabServer) listMerges(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if !slices.Contains([]string{"", "all", "opened", "closed", "merged", "locked"}, state) {
		glReply(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	var out []*GitLabMerge
	for _, m := range s.merges.all {
		switch {
		case state != "" && state != "all" && m.State != state:
		case q.Has("source_branch") && m.SourceBranch != q.Get("source_branch"):
		case q.Has("target_branch") && m.TargetBranch != q.Get("target_branch"):
		default:
			out = append(out, m)
		}
	}
	slices.Reverse(out) // created_at desc, GitLab's default
	page := glPaginate(w, r, len(out))
	items := make([]map[string]any, 0, page.to-page.from)
	for _, m := range out[page.from:page.to] {
		items = append(items, s.mergeJSON(m))
	}
	glReply(w, http.StatusOK, items)
}

func (s *GitLabServer) createMerge(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Title              *string   `json:"title"`
		Description        *string   `json:"description"`
		SourceBranch       *string   `json:"source_branch"`
		TargetBranch       *string   `json:"target_branch"`
		Labels             *glLabels `json:"labels"`
		RemoveSourceBranch *bool     `json:"remove_source_branch"`
		Squash             *bool     `json:"squash"`
	}
	if !glDecode(w, r, &p) {
		return
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", p.Title}, {"source_branch", p.SourceBranch}, {"target_branch", p.TargetBranch}} {
		if f.v == nil || strings.TrimSpace(*f.v) == "" {
			glReply(w, http.StatusBadRequest, map[string]any{"error": f.name + " is missing"})
			return
		}
	}
	src, dst := *p.SourceBranch, *p.TargetBranch
	if src == dst {
		glReply(w, http.StatusUnprocessableEntity, map[string]any{"message": []string{"You can't use same project/branch for source and target"}})
		return
	}
	if s.merges.branches != nil {
		bad := map[string][]string{}
		for field, b := range map[string]string{"source_branch": src, "target_branch": dst} {
			if !slices.Contains(s.merges.branches, b) {
				bad[field] = []string{"does not exist"}
			}
		}
		if len(bad) > 0 {
			glReply(w, http.StatusBadRequest, map[string]any{"message": bad})
			return
		}
	}
	for _, m := range s.merges.all {
		if m.State == "opened" && m.SourceBranch == src && m.TargetBranch == dst {
			glReply(w, http.StatusConflict, map[string]any{"message": []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", m.IID)}})
			return
		}
	}
	desc := ""
	if p.Description != nil {
		desc = *p.Description
	}
	if msg := glCheckIssue(*p.Title, desc); msg != nil {
		glReply(w, http.StatusBadRequest, map[string]any{"message": msg})
		return
	}
	now := s.tick()
	s.nextID++
	m := &GitLabMerge{ID: s.nextID, IID: int64(len(s.merges.all) + 1), Title: *p.Title, Description: desc, State: "opened",
		SourceBranch: src, TargetBranch: dst, CreatedAt: now, UpdatedAt: now,
		RemoveSourceBranch: p.RemoveSourceBranch != nil && *p.RemoveSourceBranch, Squash: p.Squash != nil && *p.Squash}
	if p.Labels != nil {
		m.Labels = s.useLabels(*p.Labels)
	}
	s.merges.all = append(s.merges.all, m)
	glReply(w, http.StatusCreated, s.mergeJSON(m))
}

// mergeJSON is m as GitLab's API shows a merge request. s.mu must be
// held.
func (s *GitLabServer) mergeJSON(m *GitLabMerge) map[string]any {
	ref := fmt.Sprintf("!%d", m.IID)
	return map[string]any{
		"id": m.ID, "iid": m.IID, "project_id": GitLabProjectID, "source_project_id": GitLabProjectID, "target_project_id": GitLabProjectID,
		"title": m.Title, "description": m.Description, "state": m.State, "draft": false, "work_in_progress": false,
		"source_branch": m.SourceBranch, "target_branch": m.TargetBranch, "labels": slices.Concat([]string{}, m.Labels),
		"created_at": glTime(m.CreatedAt), "updated_at": glTime(m.UpdatedAt), "merged_at": nil, "closed_at": nil,
		"author": s.user(gitlabBotUsername), "assignees": []any{}, "reviewers": []any{}, "milestone": nil,
		"merge_status": "checking", "detailed_merge_status": "checking", "has_conflicts": false,
		"sha": fmt.Sprintf("%040x", m.ID), "merge_commit_sha": nil, "squash": m.Squash, "force_remove_source_branch": m.RemoveSourceBranch,
		"web_url":          fmt.Sprintf("%s/%s/-/merge_requests/%d", s.srv.URL, GitLabProjectPath, m.IID),
		"references":       map[string]any{"short": ref, "relative": ref, "full": GitLabProjectPath + ref},
		"user_notes_count": 0, "upvotes": 0, "downvotes": 0, "discussion_locked": nil,
	}
}
