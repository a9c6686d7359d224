package run

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform/planparse"
)

// TriggerRemediate is the scheduler trigger of a remediation's apply: the
// Manager hands such a run to its Apply hook, which records it itself.
const TriggerRemediate = "remediate"

// Store is what the Manager records runs in: store.DaemonStore's run,
// queue and log methods.
type Store interface {
	QueueRun(ctx context.Context, r store.Run) error
	StartQueuedRun(ctx context.Context, r store.Run) error
	FinishQueuedRun(ctx context.Context, r store.Run) error
	DeleteQueuedRun(ctx context.Context, id string) error
	FinishRunOnly(ctx context.Context, r store.Run) error
	FinishRunWithOutcome(ctx context.Context, r store.Run, decide store.Outcome) (before, after store.WorkspaceState, err error)
	RecoverRuns(ctx context.Context, at time.Time, keep ...string) (store.Recovered, error)
	Run(ctx context.Context, id string) (store.Run, error)
	Workspace(ctx context.Context, name string) (store.WorkspaceState, error)
	Workspaces(ctx context.Context) ([]store.WorkspaceState, error)
	SaveRunLog(ctx context.Context, runID string, log []byte) error
	Prune(ctx context.Context, keep int, olderThan time.Time) (int, error)
}

// Inventory is the current config as the Manager reads it, at every
// run (inventory.Watcher).
type Inventory interface {
	// Target is a workspace's run target (false: not configured).
	Target(workspace string) (pipeline.Target, bool)
	// MaxLogBytes bounds a run's log (store.max_log_bytes).
	MaxLogBytes() int
	// Names are the configured workspaces (scans included), in inventory
	// order.
	Names() []string
}

// Incidents is the run -> incident hand-off of a finished detection. The
// Manager asks Outcome for the run's incident decision and hands it to
// the store, which evaluates it inside the transaction that records the
// run (store.AlertStore.FinishRunWithOutcome): the run, its incident
// changes and their outbox messages commit together or not at all, so a
// crash can lose none of them. After that commit the Manager calls
// Options.Recorded.
type Incidents interface {
	// Outcome is the incident decision for workspace's run runID,
	// finished at now (inventory.Watcher.Outcome: the current alert
	// plan's).
	Outcome(workspace string, now time.Time, runID string) store.Outcome
}

// Leader says whether this daemon may queue runs: nil, or the error the
// API answers (a standby's).
type Leader interface{ Ready() error }

// Remediation is where remediation meets the run lifecycle
// (remediation.Controller).
type Remediation interface {
	// Apply runs an approved remediation's apply (a TriggerRemediate run,
	// in the workspace's slot) as run runID, the scheduler's id of that
	// run, so that Cancel reaches it, writing into log, the run's live
	// log. It returns the apply run's status, "" when it recorded none.
	Apply(ctx context.Context, workspace, runID string, log io.Writer) drift.Status
	// AfterDetect is told every recorded detection (remediation
	// proposals), after Options.Recorded.
	AfterDetect(ctx context.Context, workspace, runID string, res drift.Result, plan *planparse.Plan)
}

// Options configures a Manager. Store, Logger, Auditor, Metrics,
// Inventory and Incidents are required.
type Options struct {
	Store   Store
	Logger  *slog.Logger
	Auditor *pipeline.Auditor // runs a detection (the runner mode's)
	Metrics *metrics.Metrics
	// Schedule is the scheduler's configuration; its callbacks (Run,
	// OnEnqueue, OnDrop, OnSkip, OnQueue, OnCycle) are the Manager's.
	Schedule  schedule.Options
	Inventory Inventory
	Incidents Incidents
	// Recorded, if set, is told after every commit of a run with its
	// outcome, once State has the new state: the outbox may have new
	// messages (outbox.Dispatcher.Wake), the fleet's groups may have
	// changed (fleet.Service.Recorded).
	Recorded func()
	// Leader nil: always leading.
	Leader Leader
	// Remediation nil: remediate runs do nothing, detections go nowhere.
	Remediation Remediation
}

// Manager is the run lifecycle of one daemon (see the package doc).
type Manager struct {
	o     Options
	log   *slog.Logger
	store Store
	sched *schedule.Scheduler
	// runs registers queued and running runs: their live log and cancel.
	runs *runlog.Registry

	mu     sync.Mutex
	states map[string]store.WorkspaceState // cache of the store's workspace states
	// adopted holds the workspaces whose adopted Job (kubernetes mode) is
	// still awaited: their scheduled runs are skipped, manual ones refused.
	adopted map[string]bool
	// recovered holds the ids of queued runs a previous process recorded,
	// queued again by Recover: their record exists already.
	recovered map[string]bool
	// onResult is told every recorded result while Once waits.
	onResult func(drift.Result)
	// queueMu orders recording a queued run (queued) before any cancel of
	// it is recorded (Cancel).
	queueMu sync.Mutex
	// stopping is set when no run may start any more (shutdown, lost
	// Lease, the Kubernetes runner's Watch stopped): runs ending then were
	// interrupted, not failed, and stay running in the store.
	stopping atomic.Bool
}

// New builds a Manager and its scheduler, and loads the workspace states.
func New(ctx context.Context, o Options) (*Manager, error) {
	if o.Store == nil || o.Logger == nil || o.Auditor == nil || o.Metrics == nil || o.Inventory == nil || o.Incidents == nil {
		return nil, errors.New("driftwatch/run: Store, Logger, Auditor, Metrics, Inventory and Incidents are required")
	}
	if o.Auditor.Fleet == nil {
		// Scans compare with the recorded states of the workspaces
		// configured now.
		a := *o.Auditor
		a.Fleet = storeFleet{store: o.Store, inv: o.Inventory, wait: fleetWait, poll: fleetPoll}
		o.Auditor = &a
	}
	m := &Manager{o: o, log: o.Logger, store: o.Store, runs: runlog.NewRegistry(),
		states: map[string]store.WorkspaceState{}, adopted: map[string]bool{}, recovered: map[string]bool{}}
	states, err := o.Store.Workspaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range states {
		m.states[s.Workspace] = s
	}
	so := o.Schedule
	so.Logger = o.Logger
	so.Run = m.runOne
	so.OnEnqueue = m.queued
	so.OnDrop = func(r schedule.QueuedRun) {
		m.dropQueued(context.Background(), r, "the workspace was removed from the config while the run was queued")
	}
	so.OnSkip = o.Metrics.Skipped
	so.OnQueue = o.Metrics.SetQueue
	so.OnCycle = m.holdsCycle
	if m.sched, err = schedule.New(so); err != nil {
		return nil, err
	}
	return m, nil
}

// SetJobs replaces the scheduled workspaces (start and reload).
func (m *Manager) SetJobs(jobs []schedule.Job) error { return m.sched.SetJobs(jobs) }

// Schedule runs the scheduler until ctx ends: scheduled and queued runs
// start from here on.
func (m *Manager) Schedule(ctx context.Context) error { return m.sched.Run(ctx) }

// Next is a workspace's next scheduled run.
func (m *Manager) Next(workspace string) (time.Time, bool) { return m.sched.Next(workspace) }

// Live is a queued or running run's log (nil: not queued or running here).
func (m *Manager) Live(runID string) *runlog.Log { return m.runs.Live(runID) }

// Stop is called when no run may start any more: runs ending from here on
// were interrupted, and stay running in the store for the next daemon.
func (m *Manager) Stop() { m.stopping.Store(true) }

// State is a workspace's last recorded state.
func (m *Manager) State(workspace string) (store.WorkspaceState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[workspace]
	return s, ok
}

// Snapshots are the workspaces' states as the per-workspace metrics read
// them: status "unknown" for one never recorded.
func (m *Manager) Snapshots(workspaces []string) []metrics.WorkspaceSnapshot {
	out := make([]metrics.WorkspaceSnapshot, 0, len(workspaces))
	for _, w := range workspaces {
		s, ok := m.State(w)
		snap := metrics.WorkspaceSnapshot{Name: w, Status: "unknown"}
		if ok {
			snap.Status, snap.Counts = s.Status, drift.CountFindings(s.Findings)
			snap.LastRunAt, snap.LastSuccessAt, snap.StatusSince = s.LastRunAt, s.LastSuccessAt, s.Since
		}
		out = append(out, snap)
	}
	return out
}

// leading is Options.Leader's answer (nil: leading).
func (m *Manager) leading() error {
	if m.o.Leader == nil {
		return nil
	}
	return m.o.Leader.Ready()
}

// newLog is a run's log. For a workspace with log_plan_text its first
// line is runlog.ValuesNotice, so the server serves it only to an
// authenticated reader, from the first line on.
func (m *Manager) newLog(workspace string) *runlog.Log {
	l := runlog.New(m.o.Inventory.MaxLogBytes(), nil)
	if t, ok := m.o.Inventory.Target(workspace); ok && t.Request.LogPlanText {
		l.Printf("%s", runlog.ValuesNotice)
	}
	return l
}

// saveLog stores a finished run's log and ends its live followers with
// the verdict: stored first, so a reader finds it in one place or the other.
func (m *Manager) saveLog(ctx context.Context, log *slog.Logger, runID string, l *runlog.Log, verdict drift.Status) {
	err := m.storeRetry(ctx, log, "the run's log", func() error {
		return m.store.SaveRunLog(context.WithoutCancel(ctx), runID, l.Bytes())
	})
	if err != nil {
		log.Warn("store: save run log", "err", err)
	}
	l.Close(string(verdict))
}
