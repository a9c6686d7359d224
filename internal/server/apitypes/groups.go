package apitypes

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Group is a group incident: drift findings of several workspaces that
// share one cause, alerted as one. Its members name addresses, actions
// and attribute paths, never values.
type Group struct {
	ID string `json:"id"`
	// Cause is "provider", "commit" or "shape"; CauseKey the cause,
	// readable.
	Cause    string `json:"cause"`
	CauseKey string `json:"cause_key"`
	Title    string `json:"title"`
	State    string `json:"state"` // open or resolved
	Severity string `json:"severity"`
	// Workspaces counts the distinct workspaces among Members.
	Workspaces int           `json:"workspaces"`
	Members    []GroupMember `json:"members"`
	// FirstSeen and LastSeen are the earliest and latest first sighting
	// of a member. Every time is left out when zero.
	FirstSeen  time.Time `json:"first_seen,omitzero"`
	LastSeen   time.Time `json:"last_seen,omitzero"`
	OpenedAt   time.Time `json:"opened_at,omitzero"`
	NotifiedAt time.Time `json:"notified_at,omitzero"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}

// GroupMember is one grouped finding: a workspace's resource, what
// changed on it (attribute paths, never values).
type GroupMember struct {
	Workspace  string     `json:"workspace"`
	Address    string     `json:"address"`
	Type       string     `json:"type"`
	Kind       drift.Kind `json:"kind"`
	Action     string     `json:"action"`
	Attributes []string   `json:"attributes"`
}

// GroupList is GET /api/v1/groups' answer.
type GroupList struct {
	Groups []Group `json:"groups"`
}
