package acceptance

import (
	"context"
	"errors"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/remediation/accept"
	"github.com/driftwatch/driftwatch/internal/remediation/accept/propose"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/source"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// Input is one acceptance to do.
type Input struct {
	Request terraform.Request
	// Addresses limit what is accepted (empty: every drifted resource).
	Addresses []string
	// Deletions accepts resources deleted outside Terraform too, as
	// removed blocks (engine.AcceptScope).
	Deletions bool
	// Proposing, if set, proposes a proven change of a git source.
	Proposing *Proposing
}

// Proposing is how a proven change is proposed: the accept block's
// settings, the opener of its notifier, and the workspace page's link.
type Proposing struct {
	Settings config.AcceptProposal
	Opener   notify.ChangeOpener
	Link     string
}

// Steps are the two steps of an acceptance, engine.Accept and
// propose.Propose, and the one of an adoption, engine.Adopt, unless a
// test says otherwise.
type Steps struct {
	Accept  func(ctx context.Context, req terraform.Request, scope engine.AcceptScope) (engine.AcceptOutcome, error)
	Propose func(ctx context.Context, req propose.Request) (propose.Proposal, error)
	// Adopt is Service.Adopt's one step.
	Adopt func(ctx context.Context, req terraform.Request, findings []string) (drift.AdoptOutcome, error)
}

func (s Steps) orDefault() Steps {
	if s.Accept == nil {
		s.Accept = engine.Accept
	}
	if s.Propose == nil {
		s.Propose = propose.Propose
	}
	if s.Adopt == nil {
		s.Adopt = engine.Adopt
	}
	return s
}

// Do computes and proves the change that accepts in's drift and, when
// in.Proposing is set and the source is git, proposes it. The outcome is
// an Acceptance's: State and what goes with it (the caller sets ID,
// Workspace, RequestedBy and the times). Errors are the outcome's
// (AcceptFailed with Error), worded for a person and free of secrets.
func Do(ctx context.Context, in Input, steps Steps) store.Acceptance {
	steps = steps.orDefault()
	var a store.Acceptance
	out, err := steps.Accept(ctx, in.Request, engine.AcceptScope{Addresses: in.Addresses, Deletions: in.Deletions})
	a.Tool, a.Commit = out.Tool, out.Commit
	if c := out.Change; c != nil {
		a.Accepted, a.Refused = accepted(c), refused(c)
		if len(c.Accepted) > 0 {
			a.Patch = c.Patch()
		}
	}
	switch {
	case err != nil:
		a.State, a.Error = store.AcceptFailed, err.Error()
		return a
	case len(a.Accepted) == 0:
		a.State = store.AcceptRefused
		return a
	case !out.Proven:
		a.State, a.Remaining = store.AcceptNotProven, out.Remaining
		return a
	}
	a.State = store.AcceptProven
	g := in.Request.Source.Git
	if in.Proposing == nil || g == nil {
		return a
	}
	p := in.Proposing
	prop, err := steps.Propose(ctx, propose.Request{
		Workspace: in.Request.Workspace,
		Git:       source.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile},
		CacheDir:  sandbox.GitCacheDir(in.Request), Commit: out.Commit, Change: out.Change, Tool: out.Tool, Link: p.Link,
		Opener: p.Opener, BranchPrefix: p.Settings.BranchPrefix, Labels: p.Settings.Labels,
		Author: source.Identity{Name: p.Settings.AuthorName, Email: p.Settings.AuthorEmail},
	})
	if err != nil {
		a.State, a.Error = store.AcceptFailed, fmt.Sprintf("proven, but not proposed: %v (the patch is the change; apply it by hand)", err)
		return a
	}
	a.State = store.AcceptProposed
	a.Branch, a.Base = prop.Branch, prop.Base
	a.ProposalURL, a.ProposalNumber, a.ProposalExisting = prop.URL, prop.Number, prop.Existing
	return a
}

func accepted(c *accept.Result) []store.AcceptedAttribute {
	var out []store.AcceptedAttribute
	for _, x := range c.Accepted {
		out = append(out, store.AcceptedAttribute{Address: x.Address, Attribute: x.Attribute, Where: x.Where, Kind: x.Kind})
	}
	return out
}

func refused(c *accept.Result) []store.AcceptRefusal {
	var out []store.AcceptRefusal
	for _, x := range c.Refused {
		out = append(out, store.AcceptRefusal{Address: x.Address, Attribute: x.Attribute, Reason: x.Reason})
	}
	return out
}

// ErrNoProposer is Once's error for --propose without an accept.notifier.
var ErrNoProposer = errors.New("no accept.notifier is configured: a proven change is shown as a diff, not proposed")
