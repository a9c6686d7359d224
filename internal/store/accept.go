package store

import (
	"context"
	"time"
)

// AcceptanceState is where accepting a workspace's drift as code stands.
type AcceptanceState string

// Acceptance states. Running is the only unfinished one.
const (
	// AcceptRunning: planning, tracing and proving.
	AcceptRunning AcceptanceState = "running"
	// AcceptProposed: proven and proposed (a pull or merge request):
	// waiting for merge. The workspace's drift incident resolves when the
	// merged code's next check is clean.
	AcceptProposed AcceptanceState = "proposed"
	// AcceptProven: proven, not proposed (no accept.notifier, or a
	// workspace whose source is a local path): Patch is the answer.
	AcceptProven AcceptanceState = "proven"
	// AcceptNotProven: a plan of the changed code still differs
	// (Remaining says how); nothing is proposed.
	AcceptNotProven AcceptanceState = "not_proven"
	// AcceptRefused: every drifted attribute was refused (Refused says
	// why); nothing is proposed.
	AcceptRefused AcceptanceState = "refused"
	// AcceptFailed: a step failed (Error), or the daemon stopped while it
	// ran.
	AcceptFailed AcceptanceState = "failed"
)

// AcceptInterrupted is the Error of an acceptance the daemon stopped
// while it ran (InterruptAcceptances).
const AcceptInterrupted = "interrupted: driftwatch stopped while it ran"

// Acceptance is one request to accept a workspace's drift as code, and
// what it came to. It holds places and reasons, never a value, except in
// Patch: the code change itself, which holds the drifted values the
// workspace's code is to take (never a sensitive one: those are refused).
type Acceptance struct {
	ID        string
	Workspace string
	// Addresses limit what is accepted (empty: every drifted resource).
	Addresses []string
	// Deletions: resources deleted outside Terraform were accepted too,
	// as removed blocks (asked for).
	Deletions   bool
	RequestedBy string
	State       AcceptanceState
	// Tool is the Terraform version that planned; Commit the source's
	// commit the change is made on (git sources).
	Tool, Commit string
	Accepted     []AcceptedAttribute
	Refused      []AcceptRefusal
	// Remaining is a not-proven proof plan's difference.
	Remaining []string
	// Patch is the change as a unified diff, paths relative to the root
	// module.
	Patch string
	// Branch, Base and ProposalURL name the proposal: the pushed branch,
	// the branch it is to merge into and its pull (merge) request, whose
	// number is ProposalNumber. ProposalExisting: an open request for the
	// branch was found, not opened.
	Branch, Base, ProposalURL string
	ProposalNumber            int
	ProposalExisting          bool
	Error                     string
	CreatedAt, FinishedAt     time.Time
}

// AcceptedAttribute is one attribute accepted: where its value is set,
// rewritten.
type AcceptedAttribute struct {
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

// AcceptanceStore keeps acceptances across restarts.
type AcceptanceStore interface {
	// AddAcceptance stores a new running acceptance; ID, Workspace and
	// CreatedAt are required and the ID must be new.
	AddAcceptance(ctx context.Context, a Acceptance) error
	// FinishAcceptance records a running acceptance's outcome (every
	// field but ID, Workspace, Addresses, RequestedBy and CreatedAt); its
	// State must be a finished one and FinishedAt set. An unknown ID is
	// ErrNotFound; a finished one is ErrConflict and changes nothing.
	FinishAcceptance(ctx context.Context, a Acceptance) error
	// Acceptance returns one; ErrNotFound if unknown.
	Acceptance(ctx context.Context, id string) (Acceptance, error)
	// Acceptances lists a workspace's acceptances (every workspace's for
	// ""), newest first, at most limit (0: no limit).
	Acceptances(ctx context.Context, workspace string, limit int) ([]Acceptance, error)
	// InterruptAcceptances fails every running acceptance at at with
	// AcceptInterrupted: a daemon's first call, for what a stopped one
	// left running. It returns how many.
	InterruptAcceptances(ctx context.Context, at time.Time) (int, error)
}
