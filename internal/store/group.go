package store

import (
	"context"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// GroupIncident is the stored lifecycle of one group's incident: drift
// findings of several workspaces that share a cause (incident/group),
// alerted as one. ID is the group's, stable for its cause, so the
// incident follows the group as members join and leave.
type GroupIncident struct {
	ID  string // the group's ID ("g-<hash>")
	Key string // the incident key its messages carry ("dw-group-<hash>")
	// Cause is "provider", "commit" or "shape"; CauseKey the cause,
	// readable (provider and versions, the commit, or type and
	// attributes, with the change's shape).
	Cause, CauseKey string
	Title           string // as last notified, with its counts
	// State is open or resolved: a group is never pending (its members
	// waited for it, see grouping.wait).
	State IncidentState
	// Members are the grouped findings as last notified, sorted by
	// workspace then address.
	Members    []GroupMember
	Workspaces int // distinct workspaces among Members
	// FirstSeen and LastSeen are the earliest and latest first sighting
	// of a member.
	FirstSeen, LastSeen time.Time
	OpenedAt            time.Time
	NotifiedAt          time.Time // last message enqueued
	ResolvedAt          time.Time
	Fingerprint         string // of Members and their findings, as last notified
	Severity            string
}

// GroupMember is one grouped finding: a workspace's finding, as notified.
type GroupMember struct {
	Workspace string        `json:"workspace"`
	Finding   drift.Finding `json:"finding"`
}

// GroupStore keeps group incidents across restarts. Their messages go
// through the same outbox as a workspace's incidents, under the group's
// Key.
type GroupStore interface {
	// GroupIncidents lists the group incidents: the open ones, or with
	// all every one (resolved ones too), most recently notified first.
	GroupIncidents(ctx context.Context, all bool) ([]GroupIncident, error)
	// GroupIncident returns one by group ID; ErrNotFound if unknown.
	GroupIncident(ctx context.Context, id string) (GroupIncident, error)
	// DecideGroups writes, in one transaction, what decide makes of every
	// stored group incident (every state): the changed ones (whole rows,
	// upserted by ID) and the messages to enqueue. Each changed incident
	// needs an ID, a Key that no other group and no workspace's incident
	// holds, a Cause and a State (open or resolved); each message is
	// checked as FinishRunWithOutcome checks one, its IncidentKey one of
	// the group incidents' keys (stored, or returned by this decide). A
	// message's zero CreatedAt becomes at. Any failure, decide panicking
	// included, writes nothing.
	DecideGroups(ctx context.Context, at time.Time,
		decide func(stored []GroupIncident) ([]GroupIncident, []OutboxMessage)) error
}
