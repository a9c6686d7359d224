package store

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// ErrNotFound is returned when a run or workspace does not exist.
var ErrNotFound = errors.New("not found")

// ErrUnavailable marks a write that failed because of the storage itself
// (disk full, a read-only or failing file system), not because of what
// was written: the same write may succeed once the storage is back, so a
// caller holding a result it must not lose (a run's verdict, a delivery)
// keeps it and tries again. Errors wrapping it keep their own text.
var ErrUnavailable = errors.New("store unavailable")

// Run statuses beyond drift.Status.
const (
	// RunQueued marks a run waiting for a run slot; its StartedAt is when
	// it was queued until it starts.
	RunQueued drift.Status = "queued"
	// RunRunning marks a run that has started and not finished.
	RunRunning drift.Status = "running"
	// RunInterrupted marks a run that ended without a verdict because its
	// runner went away: an adopted Job of a workspace removed from the
	// config meanwhile. Stores written by driftwatch before RecoverRuns
	// also hold runs interrupted by a restart.
	RunInterrupted drift.Status = "interrupted"
	// RunCancelled marks a run stopped on request: neither clean nor
	// errored, it changes no workspace state and no incident.
	RunCancelled drift.Status = "cancelled"
)

// RunRestartedError is the Error of a run that RecoverRuns finds running:
// its daemon stopped or died during it, and its processes with it.
const RunRestartedError = "daemon restarted: the run was in flight when the previous driftwatch process stopped"

// Recovered is what RecoverRuns found a previous process left.
type Recovered struct {
	// Errored are the runs it was running, now errored.
	Errored []Run
	// Queued are the runs still waiting for a slot, still queued.
	Queued []Run
}

// Run is one execution of one workspace.
type Run struct {
	ID        string
	Workspace string
	// Trigger says why it ran: "schedule", "manual", "initial" (never
	// checked), "rerun" (after a run a restart errored), "once",
	// "remediate" (an apply), "verify" and "adopted" (the detections after
	// an apply).
	Trigger    string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	Status     drift.Status
	Error      string
	Tool       string
	Findings   []drift.Finding
	Phases     []drift.Phase
	// Providers are the provider versions the run used (source address
	// to version; nil: unknown). Only the workspace state keeps them.
	Providers map[string]string
	// Managed are the managed instances of the workspace's state the run
	// saw (drift.Result.Managed; nil: unknown, a scan). Only the workspace
	// state keeps them.
	Managed []drift.Managed
}

// Counts tallies the run's findings.
func (r Run) Counts() drift.Counts { return drift.CountFindings(r.Findings) }

// WorkspaceState is the latest known state of a workspace.
type WorkspaceState struct {
	Workspace string
	Status    drift.Status
	// Since is when Status last changed.
	Since         time.Time
	LastRunID     string
	LastRunAt     time.Time // start of the last finished run
	LastSuccessAt time.Time // finish of the last run that was not errored
	Fingerprint   string    // drift.Fingerprint of the last successful run's findings
	Findings      []drift.Finding
	Error         string
	// ConsecutiveErrors counts errored runs since the last successful one.
	ConsecutiveErrors int
	// Providers are the provider versions of the last successful run
	// that knew them, CleanProviders those of the last clean one (source
	// address to version): what moved since, the grouping's provider
	// cause (incident/group.ProviderChanges).
	Providers, CleanProviders map[string]string
	// Managed are the managed instances of the workspace's state, with
	// their identities, as the last successful run that read them saw
	// them: what scans compare with. Nil: never known; empty: a state
	// with nothing in it.
	Managed []drift.Managed
}

// Store persists runs and workspace state. Every method is safe for
// concurrent use; every write is durable when it returns, so everything
// written survives a restart (Close, then open the same data again) and a
// crash of the process.
//
// Store is the part the HTTP server reads; the daemon needs it together
// with the other interfaces here (DaemonStore).
type Store interface {
	// StartRun records a run as running. ID, Workspace and StartedAt are
	// required and the ID must be new (whatever that run's status): else it
	// is an error and nothing is written. Status and FinishedAt are ignored.
	StartRun(ctx context.Context, r Run) error
	// FinishRun records the outcome of a started run and updates the
	// workspace's state in the same transaction, returning the state before
	// and after. An errored run keeps the previous findings and fingerprint
	// (an error says nothing about drift) but sets Status errored. An
	// unknown ID is ErrNotFound; a run that is not running (queued,
	// finished, cancelled, interrupted) is an error and changes nothing: a
	// run finishes once.
	FinishRun(ctx context.Context, r Run) (before, after WorkspaceState, err error)
	// RecoverRuns is a daemon's first write at start, before it queues
	// anything: it settles what a previous process left unfinished. Every
	// run still marked running (its process died with the daemon: kill -9,
	// crash, shutdown) is finished errored at at, with Error
	// RunRestartedError, and returned in Errored, oldest StartedAt first.
	// Every queued run stays queued and is returned in Queued, oldest first,
	// so that the daemon queues it again under its own id. Workspace states
	// and incidents are left alone (a restart says nothing about drift), and
	// so are finished and cancelled runs. A run is errored once: a second
	// call returns it no more (a queued run is returned until it leaves the
	// queue). Runs whose ID is in keep are left as they are and not
	// returned: runs still in flight elsewhere (an adopted Kubernetes
	// Job's), which are finished later by FinishRun like any running run.
	// An ID in keep that no running or queued run has is ignored.
	RecoverRuns(ctx context.Context, at time.Time, keep ...string) (Recovered, error)
	// Run returns one run, whatever its status; ErrNotFound if unknown.
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists a workspace's runs (queued, running and finished), newest
	// StartedAt first, at most limit (0 = all). An unknown workspace has
	// none (not an error).
	Runs(ctx context.Context, workspace string, limit int) ([]Run, error)
	// Workspace returns one workspace's state; ErrNotFound until a run of
	// it has finished (FinishRun).
	Workspace(ctx context.Context, name string) (WorkspaceState, error)
	// Workspaces lists every workspace that has state, by name.
	Workspaces(ctx context.Context) ([]WorkspaceState, error)
	// Prune deletes finished runs beyond the newest keep per workspace and
	// those finished before olderThan (zero: no age limit), never the run a
	// workspace state points at, and never a queued or running run (nor do
	// they count towards keep). A pruned run's log goes with it. It returns
	// how many runs it deleted.
	Prune(ctx context.Context, keep int, olderThan time.Time) (int, error)
	// Close releases the store. Whatever was written stays: opening the
	// same data again finds it.
	Close() error
}

// DaemonStore is every store method the daemon uses: run history and
// workspace state, queued runs, incidents and the notification outbox, run
// logs, remediations, silences, acceptances and group incidents.
// store/sqlite implements it; storetest's Conformance, QueueConformance,
// AlertConformance, LogConformance, RemediationConformance,
// AcceptanceConformance and GroupConformance are its contract (silences
// have store/sqlite's own tests).
type DaemonStore interface {
	Store
	QueueStore
	AlertStore
	LogStore
	RemediationStore
	SilenceStore
	AcceptanceStore
	GroupStore
}

// IncidentState is whether an incident is open.
type IncidentState string

// Incident states.
const (
	IncidentPending  IncidentState = "pending"  // observed, not yet confirmed (confirm_after)
	IncidentOpen     IncidentState = "open"     // notified
	IncidentResolved IncidentState = "resolved" // closed; a new observation opens a new one
)

// Incident is the stored lifecycle of one incident: a workspace and class
// (drift, forbidden, errored). Key is stable for the pair.
type Incident struct {
	Key       string
	Workspace string
	Class     string
	State     IncidentState
	// Observations counts consecutive runs that saw it (confirm_after).
	Observations int
	OpenedAt     time.Time // first observation
	NotifiedAt   time.Time // last message enqueued (renotify_after)
	ResolvedAt   time.Time
	Fingerprint  string          // fingerprint of the findings last notified
	Findings     []drift.Finding // findings last notified (for deltas)
	Severity     string
	// SeverityRule names the severity rule that set Severity (empty:
	// the class's severity).
	SeverityRule string
}

// OutboxMessage is one notification for one notifier, persisted before it
// is sent. Payload is the notifier-neutral message (JSON of notify.Message).
type OutboxMessage struct {
	ID          string // unique per (message, notifier)
	Notifier    string
	IncidentKey string
	Payload     []byte
	CreatedAt   time.Time
	Attempts    int
	NextAttempt time.Time
	LastError   string // redacted by the notifier before it gets here
	DeliveredAt time.Time
	// Dead marks a message given up on (a permanent error); it stays for
	// inspection and no longer blocks later messages of its incident.
	Dead bool
	// Held marks a message enqueued while its workspace was silenced or
	// in a maintenance window: it is not due, and it holds back the rest
	// of its queue, until ReleaseHeld replaces its queue's held messages
	// with what they add up to.
	Held bool
}

// Silence holds the messages of the workspaces it matches from StartsAt
// until EndsAt: their incidents are still recorded and shown.
type Silence struct {
	ID string
	// Workspace is the silenced workspace's name, or "" with Labels.
	Workspace string
	// Labels silence every workspace that has them all.
	Labels             map[string]string
	StartsAt, EndsAt   time.Time
	Comment, CreatedBy string
	CreatedAt          time.Time
}

// Active reports whether s holds messages at t.
func (s Silence) Active(t time.Time) bool {
	return !t.Before(s.StartsAt) && t.Before(s.EndsAt)
}

// Matches reports whether s names the workspace or all its labels are
// on it.
func (s Silence) Matches(workspace string, labels map[string]string) bool {
	if s.Workspace != "" {
		return s.Workspace == workspace
	}
	if len(s.Labels) == 0 {
		return false
	}
	for k, v := range s.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// SilenceStore keeps silences across restarts.
type SilenceStore interface {
	// AddSilence stores a new silence; its ID must be new.
	AddSilence(ctx context.Context, s Silence) error
	// Silences lists the silences that end after now (active or
	// future), soonest end first.
	Silences(ctx context.Context, now time.Time) ([]Silence, error)
	// ExpireSilence ends a silence at at (if it ends later); an unknown
	// id is ErrNotFound.
	ExpireSilence(ctx context.Context, id string, at time.Time) (Silence, error)
}

// Outcome is what the pipeline decides after a run: the incidents to write
// and the messages to enqueue, computed from the workspace state before and
// after the run and the workspace's current incidents.
type Outcome func(before, after WorkspaceState, incidents []Incident) (changed []Incident, enqueue []OutboxMessage)

// AlertStore persists incidents, the notification outbox and each
// notifier's per-incident state (e.g. a Slack parent message ts).
type AlertStore interface {
	// FinishRunWithOutcome is FinishRun plus, in the same transaction, the
	// incident changes and outbox messages decide computes: a crash leaves
	// either the run without its consequences or all of them, never half.
	FinishRunWithOutcome(ctx context.Context, r Run, decide Outcome) (before, after WorkspaceState, err error)
	// Incidents lists a workspace's incidents (all states), or every open
	// or pending incident when workspace is "".
	Incidents(ctx context.Context, workspace string) ([]Incident, error)
	// RetireWorkspace writes, in one transaction and outside any run,
	// what decide makes of a workspace's stored incidents (every state):
	// the changed incidents and the messages to enqueue, checked as
	// FinishRunWithOutcome checks decide's. For a workspace that left the
	// config; its runs and state are left alone.
	RetireWorkspace(ctx context.Context, workspace string, at time.Time,
		decide func(incidents []Incident) ([]Incident, []OutboxMessage)) error
	// HeldWorkspaces lists the workspaces with held messages.
	HeldWorkspaces(ctx context.Context) ([]string, error)
	// ReleaseHeld replaces, in one transaction, each (notifier, incident)
	// queue of workspace's held messages with what collapse makes of them
	// (oldest first; nil: nothing), enqueued as due at now after every
	// message already in the outbox.
	ReleaseHeld(ctx context.Context, workspace string, now time.Time, collapse func([]OutboxMessage) *OutboxMessage) (released int, err error)
	OutboxStore
}

// OutboxStore is the part of AlertStore the outbox dispatcher delivers
// from.
type OutboxStore interface {
	// DueMessages returns undelivered, not dead messages whose NextAttempt
	// is at or before now and that are the oldest undelivered message of
	// their (notifier, incident) pair, so each incident's messages are
	// delivered in order; oldest first, at most limit.
	DueMessages(ctx context.Context, now time.Time, limit int) ([]OutboxMessage, error)
	// MarkDelivered records a delivery and the notifier's new state for the
	// incident, atomically.
	MarkDelivered(ctx context.Context, id string, at time.Time, notifierState []byte) error
	// MarkFailed records a failed attempt: Attempts+1, LastError, and the
	// next attempt time, or Dead.
	MarkFailed(ctx context.Context, id string, lastError string, next time.Time, dead bool) error
	// NotifierState returns what a notifier stored for an incident (nil if nothing).
	NotifierState(ctx context.Context, notifier, incidentKey string) ([]byte, error)
	// SaveNotifierState stores it at once (a Slack parent ts right after
	// chat.postMessage, before thread replies).
	SaveNotifierState(ctx context.Context, notifier, incidentKey string, state []byte) error
	// OutboxStats counts undelivered (pending), held and dead messages
	// per notifier.
	OutboxStats(ctx context.Context) (map[string]OutboxCounts, error)
}

// OutboxCounts are per-notifier outbox totals.
type OutboxCounts struct {
	// Pending excludes Held: held messages wait for a silence to end,
	// not for the notifier.
	Pending, Held, Dead int
	// LastError of the most recent failed attempt, for the status page.
	LastError     string
	OldestPending time.Time
}

// LogStore keeps each run's bounded, redacted Terraform output. A run's log
// is deleted with the run (Prune, DeleteQueuedRun) and, like the run,
// survives a restart.
type LogStore interface {
	// SaveRunLog stores (or replaces) the log of an existing run, in any
	// status; ErrNotFound (nothing stored) when no run has that ID. The
	// store keeps its own copy of log; a nil log is stored as an empty one.
	SaveRunLog(ctx context.Context, runID string, log []byte) error
	// RunLog returns the log last saved; ErrNotFound when the run has no
	// stored log (unknown, pruned, or none saved yet).
	RunLog(ctx context.Context, runID string) ([]byte, error)
}
