package app

import (
	"context"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
)

// DiscoverRefresh is how often the daemon re-discovers the roots of the
// config's git discover: entries (a fresh checkout of each), besides every
// reload.
const DiscoverRefresh = 5 * time.Minute

// discoverTimeout bounds the checkouts of one discovery.
const discoverTimeout = 5 * time.Minute

// reloadLoop applies a changed config on SIGHUP or when the file changes:
// a valid new config replaces the old one, an invalid one is logged and the
// old one stays. Listen address and store path need a restart.
//
// It also owns discovery: git discover: entries are expanded when it
// starts and again every DiscoverRefresh (applied only when the expanded
// inventory changed), and once the daemon leads, the incidents of
// workspaces no longer configured (removed while it was stopped) are
// retired (retireRemoved).
func (d *daemon) reloadLoop(ctx context.Context, path string, every time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	last := modTime(path)
	// Until git discovery succeeded once, the inventory lacks its roots:
	// no sweep may take them for removed.
	discovered := true
	if d.cfg.Load().HasGitDiscovery() {
		discovered = d.refresh(ctx, path) // LoadFile left them unexpanded
	}
	lastRefresh := time.Now()
	swept := false
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			d.log.Info("SIGHUP: reloading config", "file", path)
		case <-t.C:
			if !swept && discovered && d.leader.Leading() {
				swept = true
				d.retireRemoved(ctx, nil)
			}
			m := modTime(path)
			if m.Equal(last) {
				if d.cfg.Load().HasGitDiscovery() && time.Since(lastRefresh) >= DiscoverRefresh {
					lastRefresh = time.Now()
					discovered = d.refresh(ctx, path) || discovered
				}
				continue
			}
			d.log.Info("config file changed: reloading", "file", path)
		}
		last = modTime(path)
		lastRefresh = time.Now()
		if d.reload(path) {
			discovered = true
		}
	}
}

// reload applies the config file and reports whether it did.
func (d *daemon) reload(path string) bool {
	if err := d.apply(path); err != nil {
		d.log.Error("config reload failed; keeping the previous config", "err", err.Error())
		return false
	}
	return true
}

// load reads the config file and expands its git discover: entries.
func (d *daemon) load(ctx context.Context, path string) (*config.Config, error) {
	cfg, err := config.LoadFile(path)
	if err != nil {
		return nil, err
	}
	if cfg.HasGitDiscovery() {
		ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
		defer cancel()
		if err := cfg.DiscoverGit(ctx); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// refresh re-discovers (load) and applies the result only when the
// inventory changed: a root added to or removed from a git source. It
// reports whether the current inventory is the discovered one.
func (d *daemon) refresh(ctx context.Context, path string) bool {
	cfg, err := d.load(ctx, path)
	if err != nil {
		d.log.Error("discovery refresh failed; keeping the previous inventory", "err", err.Error())
		return false
	}
	if reflect.DeepEqual(inventoryOf(cfg), inventoryOf(d.cfg.Load())) {
		return true
	}
	d.log.Info("discovery found a changed inventory: applying it", "file", path)
	if err := d.applyConfig(ctx, cfg); err != nil {
		d.log.Error("discovery refresh failed; keeping the previous inventory", "err", err.Error())
		return false
	}
	return true
}

// inventoryEntry is what a refresh compares: a change in any applies
// the new config.
type inventoryEntry struct {
	Name, Schedule string
	Source         config.Source
	Labels         map[string]string
}

func inventoryOf(cfg *config.Config) []inventoryEntry {
	out := make([]inventoryEntry, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		out = append(out, inventoryEntry{Name: w.Name, Schedule: w.Schedule, Source: w.Source, Labels: w.Labels})
	}
	return out
}

// apply loads the config file and makes it current (applyConfig).
func (d *daemon) apply(path string) error {
	cfg, err := d.load(context.Background(), path)
	if err != nil {
		return err
	}
	return d.applyConfig(context.Background(), cfg)
}

// applyConfig makes cfg current: jobs, notifiers, targets and alert
// plans; remediations of workspaces turned off end, workspaces that left
// the config retire (their incidents resolve) and workspaces never
// checked are queued.
func (d *daemon) applyConfig(ctx context.Context, cfg *config.Config) error {
	targets, err := targetMap(cfg, d.owner)
	if err != nil {
		return err
	}
	if err := d.runs.SetJobs(jobs(cfg)); err != nil {
		return err
	}
	old := d.cfg.Load()
	oldPlans := *d.alerts.Load()
	if !reflect.DeepEqual(old.Notifiers, cfg.Notifiers) {
		ns, err := notifiers.Build(cfg.NotifierSpecs(), d.log)
		if err != nil {
			d.log.Error("config reload: notifiers; keeping the previous ones", "err", err.Error())
		} else {
			d.outbox.SetNotifiers(ns)
		}
	}
	d.setConfig(cfg, targets)
	d.rem.Reloaded(context.Background(), old) // remediations of workspaces turned off end
	if !reflect.DeepEqual(old.Server, cfg.Server) || old.Store.Path != cfg.Store.Path || old.MaxConcurrentRuns != cfg.MaxConcurrentRuns || old.Defaults.Jitter != cfg.Defaults.Jitter {
		d.log.Warn("server, store, max_concurrent_runs and jitter changes take effect after a restart")
	}
	d.log.Info("config reloaded", "workspaces", len(cfg.Workspaces))
	if d.leader.Leading() {
		d.retireRemoved(ctx, oldPlans)
		d.runs.QueueUnchecked(workspaceNames(cfg)) // a standby queues nothing: lead does when it leads
	}
	return nil
}

// retireRemoved resolves the open and pending incidents of every
// workspace that is not in the current config (incident.Retire): one
// resolve message per open incident through the outbox, to the
// notifiers its plan in plans routed it to (the config before the
// reload); a workspace missing there (removed while the daemon was
// stopped) is routed as a workspace of that name without labels. The
// workspace's runs and incident rows stay: its history is kept. Leader
// only.
func (d *daemon) retireRemoved(ctx context.Context, plans map[string]incident.Plan) {
	cfg := d.cfg.Load()
	open, err := d.store.Incidents(ctx, "")
	if err != nil {
		d.log.Error("retire removed workspaces: list incidents", "err", err.Error())
		return
	}
	var removed []string
	for _, in := range open {
		if !slices.Contains(removed, in.Workspace) && !slices.ContainsFunc(cfg.Workspaces, func(w config.Workspace) bool { return w.Name == in.Workspace }) {
			removed = append(removed, in.Workspace)
		}
	}
	if len(removed) == 0 {
		return
	}
	for _, ws := range removed {
		p, ok := plans[ws]
		if !ok {
			cp := *cfg
			cp.Workspaces = []config.Workspace{{Name: ws}}
			p = incident.Plans(&cp)[ws]
		}
		runID := ""
		if s, ok := d.runs.State(ws); ok {
			runID = s.LastRunID
		}
		now := time.Now().UTC()
		if err := d.store.RetireWorkspace(ctx, ws, now, p.RetireOutcome(now, runID, ws, drift.NewRunID)); err != nil {
			d.log.Error("retire removed workspace", "workspace", ws, "err", err.Error())
			continue
		}
		d.log.Info("workspace removed: its incidents are resolved", "workspace", ws, "reason", incident.RemovedReason)
	}
	d.outbox.Wake()
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}
