package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrConflict is returned when a remediation is not in a state that allows
// the requested transition (e.g. approving one that already expired).
var ErrConflict = errors.New("conflict")

// RemediationState is where a remediation is in its lifecycle.
type RemediationState string

// Remediation states. pending waits for approval (approve mode); approved
// waits for its workspace's slot (auto mode starts here); running is being
// applied; the rest are final.
const (
	RemediationPending            RemediationState = "pending"
	RemediationApproved           RemediationState = "approved"
	RemediationRejected           RemediationState = "rejected"
	RemediationExpired            RemediationState = "expired"
	RemediationRunning            RemediationState = "running"
	RemediationApplied            RemediationState = "applied"
	RemediationFailed             RemediationState = "failed"
	RemediationVerificationFailed RemediationState = "verification_failed"
	RemediationRefused            RemediationState = "refused"
)

// Final reports whether s is a final state.
func (s RemediationState) Final() bool {
	switch s {
	case RemediationPending, RemediationApproved, RemediationRunning:
		return false
	}
	return true
}

// Remediation is one proposed, approved or performed revert of a
// workspace's drift. ChangeSet, Refusals and Outcome are JSON documents of
// the remediation engine's types (the store does not interpret them); they
// hold addresses, actions and attribute paths, never a value.
type Remediation struct {
	ID          string
	Workspace   string
	DetectRunID string // the detection run that proposed it
	ApplyRunID  string // the run (trigger "remediate") that applied it, if any
	Commit      string
	Mode        string // approve or auto
	// ChangeSet is the approved change set (engine.ChangeSet), and
	// ChangeSetHash its Hash: an approval is given for this hash.
	ChangeSet     json.RawMessage
	ChangeSetHash string
	// Refusals (engine.Refusal list) of the envelope at detection.
	Refusals   json.RawMessage
	State      RemediationState
	Reason     string // one line: why it is in its state (refused, failed, expired, ...)
	CreatedAt  time.Time
	ExpiresAt  time.Time // pending only: when it expires unapproved (zero: never)
	DecidedAt  time.Time // approved, rejected or expired
	DecidedBy  string    // "api", "auto", "expiry", "config" (expired: remediation turned off), "slack:<user id> (<name>)"
	FinishedAt time.Time
	// Outcome is the engine.Outcome of the apply (JSON), if it ran.
	Outcome json.RawMessage
}

// RemediationStore persists remediations and the global pause flag. Every
// write is durable when it returns: remediations in every state and the
// pause flag survive a restart. What a restart leaves running is failed by
// InterruptRemediations, which the daemon calls at start.
type RemediationStore interface {
	// CreateRemediation stores a new remediation. ID, Workspace and
	// CreatedAt are required; an empty State is pending; missing Refusals
	// read back as an empty list and a missing Outcome as nil. An ID that
	// is already stored is an error and nothing is written.
	CreateRemediation(ctx context.Context, r Remediation) error
	// Remediation returns one (ErrNotFound if unknown).
	Remediation(ctx context.Context, id string) (Remediation, error)
	// RemediationByApplyRun returns the remediation whose apply is run
	// runID (ErrNotFound if none, and for "": a remediation without an
	// apply run is never found).
	RemediationByApplyRun(ctx context.Context, runID string) (Remediation, error)
	// Remediations lists a workspace's (or, with "", every workspace's)
	// remediations, newest first, at most limit (0: all). Newest is the
	// order they were created in, not CreatedAt. An unknown workspace has
	// none (not an error).
	Remediations(ctx context.Context, workspace string, limit int) ([]Remediation, error)
	// TransitionRemediation moves a remediation from one of the states in
	// from to to.State at to.At (required), setting Reason; DecidedAt and
	// DecidedBy (to.By) when to.State is approved, rejected or expired;
	// FinishedAt when to.State is final (and clearing it when a final
	// remediation moves back to a live state); and, if set, Outcome and
	// ApplyRunID. It returns the updated remediation, ErrNotFound, or
	// ErrConflict (wrapped) when its state is not in from: the check and
	// the write are one transaction, so of two racing transitions from the
	// same state one wins and the other is ErrConflict.
	TransitionRemediation(ctx context.Context, id string, from []RemediationState, to Transition) (Remediation, error)
	// ExpireRemediations moves every pending remediation whose ExpiresAt is
	// set and at or before now to expired (decided at now by "expiry",
	// finished at now, with a Reason) and returns them in the order they
	// were created. A second call with the same now returns none.
	ExpireRemediations(ctx context.Context, now time.Time) ([]Remediation, error)
	// InterruptRemediations marks every running remediation failed (the
	// process died during its apply), finished at at with a Reason, keeping
	// its decision, and returns them in the order they were created. Other
	// states are left alone; a second call returns none.
	InterruptRemediations(ctx context.Context, at time.Time) ([]Remediation, error)
	// RemediationPaused reads the persisted global pause flag (false when
	// never set).
	RemediationPaused(ctx context.Context) (bool, error)
	// SetRemediationPaused persists it; setting it again to the same value
	// is a no-op.
	SetRemediationPaused(ctx context.Context, paused bool) error
	// CreateRemediationWithAlert is CreateRemediation plus, in the same
	// transaction, the incident changes and outbox messages alert computes
	// for the new remediation: a crash leaves the remediation with its
	// announcement or neither, and so does an error (alert panicking, or a
	// result refused as FinishRunWithOutcome refuses decide's). A message's
	// zero CreatedAt is the remediation's. A nil alert makes it
	// CreateRemediation.
	CreateRemediationWithAlert(ctx context.Context, r Remediation, alert RemediationAlert) error
	// TransitionRemediationWithAlert is TransitionRemediation plus, in the
	// same transaction, what alert computes for the updated remediation
	// (a message's zero CreatedAt is to.At). An error writes nothing, the
	// transition included; a transition refused by its state (ErrConflict)
	// does not call alert. A nil alert makes it TransitionRemediation.
	TransitionRemediationWithAlert(ctx context.Context, id string, from []RemediationState, to Transition, alert RemediationAlert) (Remediation, error)
	// FinishRunOnly records the outcome of a running run (Status, any
	// non-empty value; FinishedAt, required; Error, Tool, Findings and
	// Phases) without touching the workspace's state or incidents: a
	// remediation's run, whose status is the remediation result (e.g.
	// "applied"), or a detection run cancelled (RunCancelled) or broken
	// off after it started. A run that is not running (unknown, queued or
	// finished) is an error and is left alone.
	FinishRunOnly(ctx context.Context, r Run) error
}

// Transition is a state change of a remediation.
type Transition struct {
	State RemediationState
	At    time.Time
	// By, if set, records who decided (approved, rejected, expired).
	By     string
	Reason string
	// Outcome and ApplyRunID, if set, are stored too.
	Outcome    json.RawMessage
	ApplyRunID string
}

// RemediationAlert computes, inside the transaction that writes a
// remediation, how it is announced: the incidents to write (a failed apply
// raises the drift incident's severity) and the messages to enqueue, the
// way an Outcome does for a run. r is the remediation as written;
// incidents are its workspace's incidents (every state). It runs with the
// database's write lock held: it must be quick and must not call the
// store.
type RemediationAlert func(r Remediation, incidents []Incident) (changed []Incident, enqueue []OutboxMessage)
