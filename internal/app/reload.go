package app

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"reflect"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/schedule"
)

// reloadLoop applies a changed config on SIGHUP or when the file changes:
// a valid new config replaces the old one, an invalid one is logged and the
// old one stays. Listen address and store path need a restart.
func (d *daemon) reloadLoop(ctx context.Context, path string, every time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	last := modTime(path)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			d.log.Info("SIGHUP: reloading config", "file", path)
		case <-t.C:
			m := modTime(path)
			if m.Equal(last) {
				continue
			}
			d.log.Info("config file changed: reloading", "file", path)
		}
		last = modTime(path)
		d.reload(path)
	}
}

func (d *daemon) reload(path string) {
	cfg, err := config.LoadFile(path)
	if err == nil {
		var targets map[string]audit.Target
		if targets, err = targetMap(cfg, d.owner); err == nil {
			if err = d.sched.SetJobs(jobs(cfg)); err == nil {
				if !reflect.DeepEqual(d.cfg.Load().Notifiers, cfg.Notifiers) {
					notifiers, nerr := buildNotifiers(cfg, d.log)
					if nerr != nil {
						d.log.Error("config reload: notifiers; keeping the previous ones", "err", nerr.Error())
					} else {
						d.outbox.SetNotifiers(notifiers)
					}
				}
				plans := alertPlans(cfg)
				old := d.cfg.Swap(cfg)
				d.targets.Store(&targets)
				d.alerts.Store(&plans)
				d.rem.Reloaded(context.Background(), old) // remediations of workspaces turned off end
				if !reflect.DeepEqual(old.Server, cfg.Server) || old.Store.Path != cfg.Store.Path || old.MaxConcurrentRuns != cfg.MaxConcurrentRuns || old.Defaults.Jitter != cfg.Defaults.Jitter {
					d.log.Warn("server, store, max_concurrent_runs and jitter changes take effect after a restart")
				}
				d.log.Info("config reloaded", "workspaces", len(cfg.Workspaces))
				if d.leading.Load() {
					d.runNew(cfg) // a standby queues nothing: lead does when it leads
				}
				return
			}
		}
	}
	d.log.Error("config reload failed; keeping the previous config", "err", err.Error())
}

// runNew queues a run of every workspace that has never been checked,
// rather than waiting for its first slot (an @daily workspace would
// otherwise stay unknown for up to a day).
func (d *daemon) runNew(cfg *config.Config) {
	d.mu.Lock()
	var names []string
	for _, w := range cfg.Workspaces {
		if _, known := d.states[w.Name]; !known {
			names = append(names, w.Name)
		}
	}
	d.mu.Unlock()
	for _, n := range names {
		// ErrBusy: already queued (e.g. an interrupted run being re-run).
		if err := d.sched.Trigger(n, "initial"); err != nil && !errors.Is(err, schedule.ErrBusy) {
			d.log.Warn("initial run not queued", "workspace", n, "err", err)
		}
	}
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// pruneLoop applies run retention hourly.
func (d *daemon) pruneLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		cfg := d.cfg.Load()
		var olderThan time.Time
		if cfg.Store.MaxAge > 0 {
			olderThan = time.Now().Add(-time.Duration(cfg.Store.MaxAge))
		}
		if n, err := d.store.Prune(ctx, cfg.Store.KeepRuns, olderThan); err != nil && ctx.Err() == nil {
			d.log.Warn("store: prune", "err", err)
		} else if n > 0 {
			d.log.Info("store: pruned old runs", "runs", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
