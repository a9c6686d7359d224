package notify

import (
	"context"
	"errors"
	"strings"
)

// ChangeRequest is a code change to propose: a pushed branch to merge.
type ChangeRequest struct {
	// Repository is GitHub's "owner/name", or GitLab's project path
	// "group/sub/name"; "" is the notifier's own repository or project.
	Repository string
	// Head is the pushed branch, Base the branch to merge it into.
	Head, Base string
	Title      string
	// Body is Markdown.
	Body   string
	Labels []string
}

// ChangeProposal is the pull (GitHub) or merge (GitLab) request proposing
// a change.
type ChangeProposal struct {
	// Number is the pull request's number or the merge request's iid.
	Number int
	// URL is its web page.
	URL string
	// Existing says an open request of Head into Base was found and
	// reused, not opened.
	Existing bool
}

// ChangeOpener opens pull or merge requests: *github.Notifier and
// *gitlab.Notifier implement it, with the credentials of their issues.
// Opening is idempotent: an open request of the same Head into the same
// Base is reused.
type ChangeOpener interface {
	OpenChange(ctx context.Context, req ChangeRequest) (ChangeProposal, error)
}

// ChangeHint is err with the hint of its vendor answer (a permanent
// APIError; a rate limit or a server error keeps its own) replaced by
// hints[status]: what a person must fix for the step of a change request
// that failed. err's other words are kept.
func ChangeHint(err error, hints map[int]string) error {
	var ae *APIError
	if retry, _ := IsRetryable(err); retry || !errors.As(err, &ae) {
		return err
	}
	h, ok := hints[ae.StatusCode]
	if !ok || h == ae.Hint {
		return err
	}
	was := ae.Error()
	ae.Hint = h
	return &hintedError{msg: strings.Replace(err.Error(), was, ae.Error(), 1), err: err}
}

// hintedError is an error with its message rewritten (ChangeHint).
type hintedError struct {
	msg string
	err error
}

func (e *hintedError) Error() string { return e.msg }
func (e *hintedError) Unwrap() error { return e.err }
