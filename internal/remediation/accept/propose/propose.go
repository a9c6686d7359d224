// Package propose pushes a proven change and opens its pull (merge)
// request. PLACEHOLDER until the proposal lands: Propose refuses.
package propose

import (
	"context"
	"errors"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/source"
)

// Request is one proposal.
type Request struct {
	Workspace    string
	Git          source.Git
	CacheDir     string
	Commit       string
	Change       *accept.Result
	Tool         string
	Link         string
	Opener       notify.ChangeOpener
	Repository   string
	BranchPrefix string
	Author       source.Identity
	Labels       []string
}

// Proposal is what Propose pushed and opened.
type Proposal struct {
	Branch, Base, Commit string
	notify.ChangeProposal
}

// Propose refuses until the proposal lands.
func Propose(context.Context, Request) (Proposal, error) {
	return Proposal{}, errors.New("proposing is not built yet")
}
