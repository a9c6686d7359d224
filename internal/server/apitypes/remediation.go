package apitypes

import (
	"encoding/json"
	"time"
)

// Remediation is a proposed change set and where it stands. ChangeSet,
// Refusals and Outcome are the documents the remediation engine stored,
// as they are.
type Remediation struct {
	ID            string          `json:"id"`
	Workspace     string          `json:"workspace"`
	State         string          `json:"state"` // pending, approved, rejected, applied, ...
	Reason        string          `json:"reason,omitempty"`
	Mode          string          `json:"mode"`
	DetectRunID   string          `json:"detect_run_id"`
	ApplyRunID    string          `json:"apply_run_id,omitempty"`
	Commit        string          `json:"commit,omitempty"`
	ChangeSet     json.RawMessage `json:"change_set"`
	ChangeSetHash string          `json:"change_set_hash"`
	Refusals      json.RawMessage `json:"refusals"`
	CreatedAt     time.Time       `json:"created_at"`
	ExpiresAt     *time.Time      `json:"expires_at,omitempty"`
	DecidedAt     *time.Time      `json:"decided_at,omitempty"`
	DecidedBy     string          `json:"decided_by,omitempty"`
	FinishedAt    *time.Time      `json:"finished_at,omitempty"`
	Outcome       json.RawMessage `json:"outcome,omitempty"`
}

// Decision is the body of an approval (optional): the change set hash
// the approver was shown.
type Decision struct {
	ChangeSetHash string `json:"change_set_hash"`
}
