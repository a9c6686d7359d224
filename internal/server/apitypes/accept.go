package apitypes

import "time"

// Acceptance is a request to accept a workspace's drift as code and what
// it came to: places and reasons, never values, but for Patch, the code
// change itself.
type Acceptance struct {
	ID        string   `json:"id"`
	Workspace string   `json:"workspace"`
	Addresses []string `json:"addresses"`
	// Deletions: resources deleted outside Terraform are accepted too,
	// as removed blocks (asked for in AcceptBody).
	Deletions   bool   `json:"deletions,omitempty"`
	RequestedBy string `json:"requested_by,omitempty"`
	// State is running, proposed (waiting for merge), proven (a diff,
	// not proposed), not_proven, refused or failed.
	State     string          `json:"state"`
	Tool      string          `json:"tool,omitempty"`
	Commit    string          `json:"commit,omitempty"`
	Accepted  []AcceptedPlace `json:"accepted"`
	Refused   []AcceptRefusal `json:"refused"`
	Remaining []string        `json:"remaining"`
	// Patch is the change as a unified diff. It holds the values the
	// code takes on, so it is served to a signed-in reader alone:
	// PatchWithheld says it was left out for an anonymous caller.
	Patch         string             `json:"patch,omitempty"`
	PatchWithheld bool               `json:"patch_withheld,omitempty"`
	Proposal      *AcceptProposalRef `json:"proposal,omitempty"`
	Error         string             `json:"error,omitempty"`
	CreatedAt     time.Time          `json:"created_at"`
	// FinishedAt is unset while it runs.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// AcceptedPlace is one attribute accepted and the place rewritten.
type AcceptedPlace struct {
	Address   string `json:"address"`
	Attribute string `json:"attribute"`
	Where     string `json:"where"`
	Kind      string `json:"kind"`
}

// AcceptRefusal is one attribute (or resource) not accepted, and why.
type AcceptRefusal struct {
	Address   string `json:"address"`
	Attribute string `json:"attribute,omitempty"`
	Reason    string `json:"reason"`
}

// AcceptProposalRef is the pull (merge) request proposing a change.
type AcceptProposalRef struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Number int    `json:"number"`
	URL    string `json:"url"`
	// Existing: an open request for the branch was found, not opened.
	Existing bool `json:"existing"`
}

// AcceptBody is the body of POST /api/v1/workspaces/{name}/accept
// (optional): the addresses to accept (none: every drifted resource)
// and whether a resource deleted outside Terraform is accepted too, as a
// removed block with destroy = false (refused unless asked).
type AcceptBody struct {
	Addresses []string `json:"addresses"`
	Deletions bool     `json:"deletions,omitempty"`
}

// AcceptanceList is GET .../acceptances' answer.
type AcceptanceList struct {
	Acceptances []Acceptance `json:"acceptances"`
}
