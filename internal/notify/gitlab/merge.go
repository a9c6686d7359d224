package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/driftwatch/driftwatch/internal/notify"
)

var _ notify.ChangeOpener = (*Notifier)(nil)

// mergeHints say what a person must fix when a merge request's step is
// refused.
var mergeHints = map[int]string{
	http.StatusUnauthorized: hints[http.StatusUnauthorized],
	http.StatusForbidden:    "the token lacks merge-request write: it needs the api scope and at least the Developer role",
	http.StatusNotFound:     "does the project exist, and can the token see it?",
	// GitLab's words for a missing branch are {"source_branch": ["does
	// not exist"]} (400); a 422 is one it cannot merge.
	http.StatusBadRequest:          branchHint,
	http.StatusUnprocessableEntity: branchHint,
}

// branchHint is the question a refused merge request's step asks: the
// answer's own words say which field.
const branchHint = "is the source branch pushed, and the target a branch of the project?"

// OpenChange implements notify.ChangeOpener: the opened merge request of
// req.Head into req.Base in project req.Repository (the notifier's
// project if empty) is reused (Existing), or else one is opened with
// req's title, description and labels. A create refused with 409 because
// a merge request of the branch opened meanwhile finds that one. It uses
// the notifier's token, instance URL and timeout; errors name the
// notifier and the step, never the token.
func (n *Notifier) OpenChange(ctx context.Context, req notify.ChangeRequest) (notify.ChangeProposal, error) {
	project := req.Repository
	if project == "" {
		project = n.project
	}
	if req.Head == "" || req.Base == "" || strings.TrimSpace(req.Title) == "" {
		return notify.ChangeProposal{}, fmt.Errorf("gitlab %s: a merge request needs a source branch, a target branch and a title", n.name)
	}
	mr, err := n.findMerge(ctx, project, req.Head, req.Base)
	if err != nil {
		return notify.ChangeProposal{}, err
	}
	existing := mr != nil
	if mr == nil {
		if mr, err = n.createMerge(ctx, project, req); err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
				return notify.ChangeProposal{}, err
			}
			again, ferr := n.findMerge(ctx, project, req.Head, req.Base)
			if ferr != nil || again == nil {
				return notify.ChangeProposal{}, err
			}
			mr, existing = again, true
		}
	}
	if existing {
		n.logger.Info("merge request already open; reusing it", "project", project, "source_branch", req.Head, "iid", mr.IID)
	} else {
		n.logger.Info("merge request opened", "project", project, "source_branch", req.Head, "target_branch", req.Base, "iid", mr.IID)
	}
	return notify.ChangeProposal{Number: int(mr.IID), URL: mr.WebURL, Existing: existing}, nil
}

// findMerge is the opened merge request of head into base (nil: none).
func (n *Notifier) findMerge(ctx context.Context, project, head, base string) (*gl.BasicMergeRequest, error) {
	opt := &gl.ListProjectMergeRequestsOptions{
		ListOptions:  gl.ListOptions{PerPage: findPerPage},
		State:        gl.Ptr("opened"),
		SourceBranch: gl.Ptr(head),
		TargetBranch: gl.Ptr(base),
	}
	var mrs []*gl.BasicMergeRequest
	err := n.call(ctx, "list the merge requests of "+project, func(o gl.RequestOptionFunc) (*gl.Response, error) {
		var resp *gl.Response
		var err error
		mrs, resp, err = n.api.MergeRequests.ListProjectMergeRequests(project, opt, o)
		return resp, err
	})
	if err != nil {
		return nil, notify.ChangeHint(err, mergeHints)
	}
	for _, mr := range mrs {
		if mr != nil && mr.IID > 0 && mr.SourceBranch == head && mr.TargetBranch == base {
			return mr, nil
		}
	}
	return nil, nil
}

// createMerge opens the merge request of req.
func (n *Notifier) createMerge(ctx context.Context, project string, req notify.ChangeRequest) (*gl.BasicMergeRequest, error) {
	opt := &gl.CreateMergeRequestOptions{
		Title:        gl.Ptr(notify.Truncate(notify.OneLine(req.Title), maxTitle)),
		Description:  gl.Ptr(truncateMarkdown(req.Body, maxDescription)),
		SourceBranch: gl.Ptr(req.Head),
		TargetBranch: gl.Ptr(req.Base),
	}
	if len(req.Labels) > 0 {
		opt.Labels = (*gl.LabelOptions)(&req.Labels)
	}
	var mr *gl.MergeRequest
	err := n.call(ctx, "open a merge request in "+project, func(o gl.RequestOptionFunc) (*gl.Response, error) {
		var resp *gl.Response
		var err error
		mr, resp, err = n.api.MergeRequests.CreateMergeRequest(project, opt, o)
		return resp, err
	})
	if err != nil {
		return nil, notify.ChangeHint(err, mergeHints)
	}
	if mr == nil || mr.IID <= 0 {
		return nil, fmt.Errorf("gitlab %s: open a merge request in %s: no merge request iid in the answer", n.name, project)
	}
	return &mr.BasicMergeRequest, nil
}
