package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v75/github"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/github/githubcfg"
)

var _ notify.ChangeOpener = (*Notifier)(nil)

// pullHints say what a person must fix when a pull request's step is
// refused.
var pullHints = map[int]string{
	http.StatusUnauthorized: "check the token in token_file",
	http.StatusForbidden:    "the token lacks pull-request write: it needs pull requests: write on the repository (classic tokens: the repo scope)",
	http.StatusNotFound:     "the repository does not exist, or the token cannot see it",
	// The answer's own words say which field: "invalid head (PullRequest)".
	http.StatusUnprocessableEntity: "is the head branch pushed, and the base a branch of the repository?",
}

// labelHints are pullHints for labelling an opened pull request.
var labelHints = map[int]string{
	http.StatusUnauthorized: pullHints[http.StatusUnauthorized],
	http.StatusForbidden:    "the token lacks issue write, which labels need (issues: write)",
	http.StatusNotFound:     pullHints[http.StatusNotFound],
}

// OpenChange implements notify.ChangeOpener: the open pull request of
// req.Head into req.Base in req.Repository (the notifier's repository if
// empty) is reused (Existing), or else one is opened with req's title and
// body; then req.Labels are added to it. A create refused because a pull
// request of the branch opened meanwhile finds that one. It uses the
// notifier's token, API URL and timeout; errors name the notifier and the
// step, never the token.
func (n *Notifier) OpenChange(ctx context.Context, req notify.ChangeRequest) (notify.ChangeProposal, error) {
	owner, repo := n.owner, n.repo
	if req.Repository != "" {
		var ok bool
		if owner, repo, ok = githubcfg.ParseRepository(req.Repository); !ok {
			return notify.ChangeProposal{}, fmt.Errorf("github %s: repository %q: want owner/name", n.name, req.Repository)
		}
	}
	if req.Head == "" || req.Base == "" || strings.TrimSpace(req.Title) == "" {
		return notify.ChangeProposal{}, fmt.Errorf("github %s: a pull request needs a head branch, a base branch and a title", n.name)
	}
	where := owner + "/" + repo
	pr, err := n.findPull(ctx, owner, repo, req.Head, req.Base)
	if err != nil {
		return notify.ChangeProposal{}, err
	}
	existing := pr != nil
	if pr == nil {
		if pr, err = n.createPull(ctx, owner, repo, req); err != nil {
			var ae *APIError
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnprocessableEntity {
				return notify.ChangeProposal{}, err
			}
			// Perhaps a pull request of the branch opened meanwhile.
			again, ferr := n.findPull(ctx, owner, repo, req.Head, req.Base)
			if ferr != nil || again == nil {
				return notify.ChangeProposal{}, err
			}
			pr, existing = again, true
		}
	}
	number := pr.GetNumber()
	if existing {
		n.logger.Info("pull request already open; reusing it", "repository", where, "head", req.Head, "pull_request", number)
	} else {
		n.logger.Info("pull request opened", "repository", where, "head", req.Head, "base", req.Base, "pull_request", number)
	}
	if len(req.Labels) > 0 {
		op := fmt.Sprintf("label pull request %s#%d", where, number)
		err := n.call(ctx, op, func(ctx context.Context) (*gh.Response, error) {
			_, resp, err := n.client.Issues.AddLabelsToIssue(ctx, owner, repo, number, req.Labels)
			return resp, err
		})
		if err != nil {
			return notify.ChangeProposal{}, notify.ChangeHint(err, labelHints)
		}
	}
	return notify.ChangeProposal{Number: number, URL: pr.GetHTMLURL(), Existing: existing}, nil
}

// findPull is the open pull request of head into base (nil: none).
func (n *Notifier) findPull(ctx context.Context, owner, repo, head, base string) (*gh.PullRequest, error) {
	opts := &gh.PullRequestListOptions{State: stateOpen, Head: owner + ":" + head, Base: base, ListOptions: gh.ListOptions{PerPage: perPage}}
	var pulls []*gh.PullRequest
	err := n.call(ctx, "list pull requests of "+owner+"/"+repo, func(ctx context.Context) (*gh.Response, error) {
		var resp *gh.Response
		var err error
		pulls, resp, err = n.client.PullRequests.List(ctx, owner, repo, opts)
		return resp, err
	})
	if err != nil {
		return nil, notify.ChangeHint(err, pullHints)
	}
	for _, pr := range pulls {
		if pr.GetHead().GetRef() == head && pr.GetBase().GetRef() == base && pr.GetNumber() > 0 {
			return pr, nil
		}
	}
	return nil, nil
}

// createPull opens the pull request of req.
func (n *Notifier) createPull(ctx context.Context, owner, repo string, req notify.ChangeRequest) (*gh.PullRequest, error) {
	title := notify.Truncate(notify.OneLine(req.Title), maxTitle)
	body := notify.Truncate(req.Body, maxBody)
	var pr *gh.PullRequest
	err := n.call(ctx, "open pull request in "+owner+"/"+repo, func(ctx context.Context) (*gh.Response, error) {
		var resp *gh.Response
		var err error
		pr, resp, err = n.client.PullRequests.Create(ctx, owner, repo, &gh.NewPullRequest{
			Title: &title, Head: &req.Head, Base: &req.Base, Body: &body,
		})
		return resp, err
	})
	if err != nil {
		return nil, notify.ChangeHint(err, pullHints)
	}
	if pr.GetNumber() <= 0 {
		return nil, fmt.Errorf("github %s: open pull request in %s/%s: the response names no pull request number", n.name, owner, repo)
	}
	return pr, nil
}
