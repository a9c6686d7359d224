package inventory

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/silence"
	"github.com/driftwatch/driftwatch/internal/store"
)

// DiscoverRefresh is how often the daemon re-discovers the roots of the
// config's git discover: entries (a fresh checkout of each), besides every
// reload.
const DiscoverRefresh = 5 * time.Minute

// Options configures a Watcher. Path, Holds and Logger are required.
type Options struct {
	// Path is the config file.
	Path string
	// Every is how often the file is checked for changes (SIGHUP reloads
	// at once). Default 5s.
	Every time.Duration
	// Owner is terraform.Request.Owner of every run (leader.StoreOwner).
	Owner string
	// Holds are the silences and maintenance windows the alert plans ask;
	// every published config sets its windows.
	Holds  *silence.Book
	Logger *slog.Logger
}

// Runs is the run lifecycle as a reload drives it (run.Manager).
type Runs interface {
	// SetJobs replaces the scheduled workspaces; an error keeps the
	// previous snapshot.
	SetJobs(jobs []schedule.Job) error
	// QueueUnchecked queues the workspaces never checked.
	QueueUnchecked(workspaces []string)
	// State is a workspace's last recorded state (its last run).
	State(workspace string) (store.WorkspaceState, bool)
}

// Store is where removed workspaces' incidents are retired.
type Store interface {
	Incidents(ctx context.Context, workspace string) ([]store.Incident, error)
	RetireWorkspace(ctx context.Context, workspace string, at time.Time,
		decide func(incidents []store.Incident) ([]store.Incident, []store.OutboxMessage)) error
}

// Leader says whether this daemon leads: a standby reloads, but retires
// and queues nothing.
type Leader interface{ Leading() bool }

// Outbox is told when retiring enqueued messages.
type Outbox interface{ Wake() }

// Notifiers is given a changed notifiers: list before the plans that
// route to it are published; an error keeps the previous notifiers.
type Notifiers interface {
	SetNotifiers(specs []notifycfg.Spec) error
}

// Follower is told of every applied config after it was published, with
// the config it replaced (remediation.Controller ends the remediations of
// workspaces turned off).
type Follower interface {
	Reloaded(ctx context.Context, old *config.Config)
}

// Parts are the daemon's parts a reload drives (Connect).
type Parts struct {
	Runs      Runs
	Store     Store
	Leader    Leader
	Outbox    Outbox
	Notifiers Notifiers
	Followers []Follower
}

// Watcher owns the daemon's inventory: it publishes one Snapshot at a
// time and replaces it on reload (Run).
type Watcher struct {
	o   Options
	p   Parts
	cur atomic.Pointer[Snapshot]
}

// New publishes the snapshot of cfg (Build) and returns its Watcher.
// Before Run, Reload, Refresh, Apply or RetireRemoved, Connect must hand
// it the parts a reload drives.
func New(cfg *config.Config, o Options) (*Watcher, error) {
	if o.Path == "" || o.Holds == nil || o.Logger == nil {
		return nil, errors.New("driftwatch/inventory: Path, Holds and Logger are required")
	}
	if o.Every <= 0 {
		o.Every = 5 * time.Second
	}
	w := &Watcher{o: o}
	s, err := Build(cfg, o.Owner, o.Holds)
	if err != nil {
		return nil, err
	}
	w.publish(s)
	return w, nil
}

// Connect hands w the parts a reload drives; call it once, before
// anything reloads.
func (w *Watcher) Connect(p Parts) { w.p = p }

// publish makes s current: its maintenance windows, then the snapshot.
func (w *Watcher) publish(s *Snapshot) {
	if windows, err := silence.Windows(s.Config.MaintenanceWindows); err == nil { // validated with the config
		w.o.Holds.SetWindows(windows)
	}
	w.cur.Store(s)
}

// Snapshot is the current snapshot: read its fields from one load when
// they must agree.
func (w *Watcher) Snapshot() *Snapshot { return w.cur.Load() }

// Config is the current config.
func (w *Watcher) Config() *config.Config { return w.cur.Load().Config }

// Target is a configured workspace's run target (false: not configured).
func (w *Watcher) Target(workspace string) (pipeline.Target, bool) {
	t, ok := w.cur.Load().Targets[workspace]
	return t, ok
}

// Alerting is the current config and alert plans, of one snapshot
// (fleet.Options.Inventory).
func (w *Watcher) Alerting() (*config.Config, map[string]incident.Plan) {
	s := w.cur.Load()
	return s.Config, s.Plans
}

// Plan is a configured workspace's alert plan (false: not configured).
func (w *Watcher) Plan(workspace string) (incident.Plan, bool) {
	p, ok := w.cur.Load().Plans[workspace]
	return p, ok
}

// Outcome is the incident decision for workspace's run runID, finished
// at now (run.Incidents): the current alert plan's (incident.Plan.Outcome),
// read when the run finishes, new incidents keyed with drift.NewRunID.
func (w *Watcher) Outcome(workspace string, now time.Time, runID string) store.Outcome {
	p, _ := w.Plan(workspace)
	return p.Outcome(now, runID, drift.NewRunID)
}

// MaxLogBytes is store.max_log_bytes.
func (w *Watcher) MaxLogBytes() int { return w.Config().Store.MaxLogBytes }

// Names are the configured workspaces, scans included, in inventory
// order.
func (w *Watcher) Names() []string { return w.cur.Load().Names() }

// Retention is store.keep_runs and store.max_age.
func (w *Watcher) Retention() (keep int, maxAge time.Duration) {
	s := w.Config().Store
	return s.KeepRuns, time.Duration(s.MaxAge)
}

// Run applies a changed config on SIGHUP or when the file changes, until
// ctx ends: a valid new config replaces the old one, an invalid one is
// logged and the old one stays. Listen address and store path need a
// restart.
//
// It also owns discovery: git discover: entries are expanded when it
// starts and again every DiscoverRefresh (applied only when the expanded
// inventory changed), and once the daemon leads, the incidents of
// workspaces no longer configured (removed while it was stopped) are
// retired (RetireRemoved).
func (w *Watcher) Run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	path := w.o.Path
	last := modTime(path)
	// Until git discovery succeeded once, the inventory lacks its roots:
	// no sweep may take them for removed.
	discovered := true
	if w.Config().HasGitDiscovery() {
		discovered = w.Refresh(ctx) // Load left them unexpanded
	}
	lastRefresh := time.Now()
	swept := false
	t := time.NewTicker(w.o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			w.o.Logger.Info("SIGHUP: reloading config", "file", path)
		case <-t.C:
			if !swept && discovered && w.p.Leader.Leading() {
				swept = true
				w.RetireRemoved(ctx, nil)
			}
			m := modTime(path)
			if m.Equal(last) {
				if w.Config().HasGitDiscovery() && time.Since(lastRefresh) >= DiscoverRefresh {
					lastRefresh = time.Now()
					discovered = w.Refresh(ctx) || discovered
				}
				continue
			}
			w.o.Logger.Info("config file changed: reloading", "file", path)
		}
		last = modTime(path)
		lastRefresh = time.Now()
		if w.Reload() {
			discovered = true
		}
	}
}

// Reload loads the config file (with discovery) and applies it; it
// reports whether it did. A failure is logged and keeps the previous
// snapshot.
func (w *Watcher) Reload() bool {
	cfg, err := loadAll(context.Background(), w.o.Path)
	if err == nil {
		err = w.Apply(context.Background(), cfg)
	}
	if err != nil {
		w.o.Logger.Error("config reload failed; keeping the previous config", "err", err.Error())
		return false
	}
	return true
}

// Refresh re-discovers (loadAll) and applies the result only when the
// inventory changed: a root added to or removed from a git source. It
// reports whether the current inventory is the discovered one.
func (w *Watcher) Refresh(ctx context.Context) bool {
	cfg, err := loadAll(ctx, w.o.Path)
	if err != nil {
		w.o.Logger.Error("discovery refresh failed; keeping the previous inventory", "err", err.Error())
		return false
	}
	if reflect.DeepEqual(entries(cfg), entries(w.Config())) {
		return true
	}
	w.o.Logger.Info("discovery found a changed inventory: applying it", "file", w.o.Path)
	if err := w.Apply(ctx, cfg); err != nil {
		w.o.Logger.Error("discovery refresh failed; keeping the previous inventory", "err", err.Error())
		return false
	}
	return true
}

// entry is what a refresh compares: a change in any applies the new
// config.
type entry struct {
	Name, Schedule string
	Source         config.Source
	Labels         map[string]string
}

func entries(cfg *config.Config) []entry {
	out := make([]entry, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		out = append(out, entry{Name: w.Name, Schedule: w.Schedule, Source: w.Source, Labels: w.Labels})
	}
	return out
}

// Apply makes cfg current: jobs, notifiers, then the snapshot of targets
// and alert plans, published at once; then the followers hear of it,
// and, while the daemon leads, workspaces that left the config retire
// (their incidents resolve) and workspaces never checked are queued.
func (w *Watcher) Apply(ctx context.Context, cfg *config.Config) error {
	next, err := Build(cfg, w.o.Owner, w.o.Holds)
	if err != nil {
		return err
	}
	if err := w.p.Runs.SetJobs(next.Jobs()); err != nil {
		return err
	}
	prev := w.Snapshot()
	old := prev.Config
	if !reflect.DeepEqual(old.Notifiers, cfg.Notifiers) {
		if err := w.p.Notifiers.SetNotifiers(cfg.NotifierSpecs()); err != nil {
			w.o.Logger.Error("config reload: notifiers; keeping the previous ones", "err", err.Error())
		}
	}
	w.publish(next)
	for _, f := range w.p.Followers {
		f.Reloaded(context.Background(), old)
	}
	if !reflect.DeepEqual(old.Server, cfg.Server) || old.Store.Path != cfg.Store.Path || old.MaxConcurrentRuns != cfg.MaxConcurrentRuns || old.Defaults.Jitter != cfg.Defaults.Jitter {
		w.o.Logger.Warn("server, store, max_concurrent_runs and jitter changes take effect after a restart")
	}
	w.o.Logger.Info("config reloaded", "workspaces", len(cfg.Workspaces))
	if w.p.Leader.Leading() {
		w.RetireRemoved(ctx, prev.Plans)
		w.p.Runs.QueueUnchecked(next.Names()) // a standby queues nothing: the daemon does when it leads
	}
	return nil
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}
