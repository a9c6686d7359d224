package app

import (
	"context"
	"os"
	"os/signal"
	"reflect"
	"syscall"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
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
	if err := d.apply(path); err != nil {
		d.log.Error("config reload failed; keeping the previous config", "err", err.Error())
	}
}

// apply loads the config file and makes it current: jobs, notifiers,
// targets and alert plans; remediations of workspaces turned off end, and
// workspaces never checked are queued.
func (d *daemon) apply(path string) error {
	cfg, err := config.LoadFile(path)
	if err != nil {
		return err
	}
	targets, err := targetMap(cfg, d.owner)
	if err != nil {
		return err
	}
	if err := d.runs.SetJobs(jobs(cfg)); err != nil {
		return err
	}
	old := d.cfg.Load()
	if !reflect.DeepEqual(old.Notifiers, cfg.Notifiers) {
		ns, err := notifiers.Build(cfg, d.log)
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
		d.runs.QueueUnchecked(workspaceNames(cfg)) // a standby queues nothing: lead does when it leads
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
