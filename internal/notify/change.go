package notify

import "context"

// PLACEHOLDER until h5-propose merges (the helper's file replaces it).

// ChangeRequest is a code change to propose: a pushed branch to merge.
type ChangeRequest struct {
	Repository string
	Head       string
	Base       string
	Title      string
	Body       string
	Labels     []string
}

// ChangeProposal is the pull (GitHub) or merge (GitLab) request proposing it.
type ChangeProposal struct {
	Number   int
	URL      string
	Existing bool
}

// ChangeOpener opens pull or merge requests.
type ChangeOpener interface {
	OpenChange(ctx context.Context, req ChangeRequest) (ChangeProposal, error)
}
