package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/outbox"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/runner/sandbox"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/version"
)

// DaemonOptions configures the always-on daemon.
type DaemonOptions struct {
	ConfigPath string
	Logger     *slog.Logger
	// Once runs every workspace once, records the results and returns.
	Once bool
	// ReloadInterval is how often the config file is checked for changes
	// (SIGHUP reloads at once). Default 5s.
	ReloadInterval time.Duration
}

// daemon is the running service: the current config (swapped on reload),
// store, scheduler, metrics and HTTP server.
type daemon struct {
	log   *slog.Logger
	owner string // runner.Request.Owner of every run (storeOwner)
	// isolation is what local runs are confined with (/api/v1/status).
	isolation sandbox.Isolation
	cfg       atomic.Pointer[config.Config]
	targets   atomic.Pointer[map[string]audit.Target]
	store     store.DaemonStore
	alerts    atomic.Pointer[map[string]alertPlan]
	outbox    *outbox.Dispatcher
	sched     *schedule.Scheduler
	metrics   *metrics.Metrics
	auditor   *audit.Auditor
	rem       *remediator

	mu     sync.Mutex
	states map[string]store.WorkspaceState // cache of the store's workspace state
	// adopted holds the workspaces whose adopted Job (kubernetes mode) is
	// still awaited: their scheduled runs are skipped, manual ones refused.
	adopted map[string]bool
	// runs registers queued and running runs: their live log and cancel
	// function.
	runs *runlog.Registry
	// queueMu orders recording a queued run (queued) before any cancel of
	// it is recorded (cancel).
	queueMu sync.Mutex

	// kube is the kubernetes runner mode (nil: local).
	kube *kubeRuntime
	// electing is set when leader election is on: lead takes the store
	// lock.
	electing bool
	// elector is the Lease's elector (campaign; nil until then and without
	// leader election): leader reads the holder it last observed.
	elector atomic.Pointer[leaderelection.LeaderElector]
	// leaseID is this daemon's identity in the Lease (campaign).
	leaseID atomic.Pointer[string]
	// leading is set while lead schedules (it holds the Lease, or leader
	// election is off; set after runs a previous process left are marked
	// interrupted). /readyz answers 503 otherwise, so
	// that a Service sends the API, the status page and run pods' results
	// to the leader only.
	leading atomic.Bool
	// stopping is set before the kubernetes runner's Watch is stopped: runs
	// ending then were interrupted, not failed.
	stopping atomic.Bool

	// onResult, if set, is told every recorded result (daemon --once).
	onResult func(drift.Result)
}

// RunDaemon runs the daemon until ctx is done (SIGTERM/SIGINT in main),
// then stops scheduling, interrupts running Terraform, waits for it and
// returns nil. With Once it returns the audit exit code of one pass.
func RunDaemon(ctx context.Context, o DaemonOptions) (exitCode int, err error) {
	if o.Logger == nil {
		return report.ExitError, errors.New("driftwatch/app: DaemonOptions.Logger is required")
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = 5 * time.Second
	}
	cfg, err := config.LoadFile(o.ConfigPath)
	if err != nil {
		return report.ExitError, fmt.Errorf("invalid config:\n%w", err)
	}
	// One scheduling daemon per store. With leader election a standby may
	// share the store (it serves the status page and read API from it):
	// the lock is then taken when leading (see lead).
	leaderElection := cfg.Runner.Mode == config.RunnerModeKubernetes && cfg.Runner.LeaderElection.Enabled && !o.Once
	if !leaderElection {
		unlock, err := claimStore(ctx, o.Logger, cfg.Store.Path, cfg.Terraform.WorkDir, storeLockWait)
		if err != nil {
			return report.ExitError, err
		}
		defer unlock()
	}
	owner := storeOwner(cfg.Store.Path)
	iso := sandbox.Isolation{Mode: "none", Reason: "runs are Kubernetes Jobs: the pod is their sandbox"}
	if cfg.Runner.Mode != config.RunnerModeKubernetes {
		if iso, err = isolation(cfg, o.Logger); err != nil {
			return report.ExitError, err
		}
	}
	targets, err := targetMap(cfg, owner)
	if err != nil {
		return report.ExitError, err
	}
	st, err := sqlite.Open(ctx, cfg.Store.Path, o.Logger)
	if err != nil {
		return report.ExitError, err
	}
	defer st.Close()

	d := &daemon{log: o.Logger, owner: owner, isolation: iso, electing: leaderElection, store: st, states: map[string]store.WorkspaceState{}, adopted: map[string]bool{}, runs: runlog.NewRegistry()}
	d.cfg.Store(cfg)
	d.targets.Store(&targets)
	plans := alertPlans(cfg)
	d.alerts.Store(&plans)
	d.auditor = &audit.Auditor{Runner: local.New(o.Logger), Logger: o.Logger}
	if cfg.Runner.Mode == config.RunnerModeKubernetes {
		if o.Once {
			return report.ExitError, errors.New("daemon --once runs locally: it needs runner.mode local (or use `driftwatch audit`)")
		}
		if d.kube, err = newKubeRuntime(cfg, o.Logger, d.mayApply); err != nil {
			return report.ExitError, err
		}
		d.auditor = &audit.Auditor{Runner: d.kube.runner, Logger: o.Logger}
	}
	states, err := st.Workspaces(ctx)
	if err != nil {
		return report.ExitError, err
	}
	for _, s := range states {
		d.states[s.Workspace] = s
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.metrics = metrics.New(reg, d.snapshot)
	if d.rem, err = newRemediator(ctx, d, metrics.NewRemediations(reg)); err != nil {
		return report.ExitError, err
	}

	notifiers, err := buildNotifiers(cfg, o.Logger)
	if err != nil {
		return report.ExitError, err
	}
	d.outbox, err = outbox.New(outbox.Options{
		Store: st, Notifiers: notifiers, Logger: o.Logger,
		OnResult: d.metrics.NotificationResult, OnPending: d.metrics.SetNotificationsPending,
	})
	if err != nil {
		return report.ExitError, err
	}

	sched, err := schedule.New(d.schedOptions(cfg))
	if err != nil {
		return report.ExitError, err
	}
	d.sched = sched
	if err := sched.SetJobs(jobs(cfg)); err != nil {
		return report.ExitError, err
	}

	if o.Once {
		// Runs the previous process did not finish are marked interrupted.
		if _, err := st.MarkInterrupted(ctx, time.Now()); err != nil {
			return report.ExitError, err
		}
		return d.once(ctx, cfg)
	}

	var handlers map[string]http.Handler
	var callbackURL string // run pods post results there: its host is allowed
	if d.kube != nil {
		handlers = d.kube.handlers()
		callbackURL = cfg.Runner.Kubernetes.Kube().CallbackURL
	}
	srv, err := server.New(server.Options{
		Store:         st,
		Logs:          st,
		Control:       control{d: d, RemediationControl: remediationControl{d.rem}},
		Handlers:      handlers,
		Gatherer:      reg,
		TokenFile:     cfg.Server.TokenFile,
		ReadTokenFile: cfg.Server.ReadTokenFile,
		OpenReads:     cfg.Server.OpenReads,
		ExternalURL:   cfg.Server.ExternalURL,
		CallbackURL:   callbackURL,
		AllowedHosts:  cfg.Server.AllowedHosts,
		Listen:        cfg.Server.Listen,
		TLSCertFile:   cfg.Server.TLSCertFile,
		TLSKeyFile:    cfg.Server.TLSKeyFile,
		Logger:        o.Logger,
		Version:       version.Version,
		Sandbox:       server.SandboxStatus{Mode: d.isolation.Mode, Reason: d.isolation.Reason},
		Leader:        d.leader,
	})
	if err != nil {
		return report.ExitError, err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.outbox.Run(gctx) })
	g.Go(func() error { return srv.Run(gctx, cfg.Server.Listen) })
	g.Go(func() error { d.reloadLoop(gctx, o.ConfigPath, o.ReloadInterval); return nil })
	g.Go(func() error { d.pruneLoop(gctx); return nil })
	if le := cfg.Runner.LeaderElection; d.kube != nil && le.Enabled {
		// Only the Lease holder schedules and runs; losing the Lease ends
		// the process (after stopping scheduling) so that it campaigns
		// again from a clean state.
		g.Go(func() error { return d.campaign(gctx, le, cfg.Runner.LeaseNamespace(), d.lead) })
	} else {
		g.Go(func() error { return d.lead(gctx) })
	}
	o.Logger.Info("driftwatch daemon started", "workspaces", len(cfg.Workspaces), "listen", cfg.Server.Listen,
		"store", cfg.Store.Path, "max_concurrent_runs", cfg.MaxConcurrentRuns, "runner", d.runnerMode())
	if err := g.Wait(); err != nil {
		return report.ExitError, err
	}
	o.Logger.Info("driftwatch daemon stopped")
	return 0, nil
}

// schedOptions wires the scheduler to the daemon: runs are recorded when
// queued (queued) and run by runOne.
func (d *daemon) schedOptions(cfg *config.Config) schedule.Options {
	return schedule.Options{
		MaxConcurrent:  cfg.MaxConcurrentRuns,
		Jitter:         time.Duration(cfg.Defaults.Jitter),
		AllowSubMinute: cfg.AllowSubMinuteSchedules,
		Logger:         d.log,
		Run:            d.runOne,
		OnEnqueue:      d.queued,
		OnDrop: func(r schedule.QueuedRun) {
			d.dropQueued(context.Background(), r, "the workspace was removed from the config while the run was queued")
		},
		OnSkip:  d.metrics.Skipped,
		OnQueue: d.metrics.SetQueue,
	}
}

func (d *daemon) runnerMode() string {
	if d.kube != nil {
		return config.RunnerModeKubernetes
	}
	return config.RunnerModeLocal
}

// lead is the daemon's scheduling side, run while it may schedule (always,
// or while it holds the Lease): Jobs a previous daemon left running are
// adopted (their runs stay running, to be finished under their ids), the
// other runs a previous process did not finish are marked interrupted and
// re-run, and
// the scheduler runs until ctx ends. On the way out scheduling stops first;
// in kubernetes mode Watch is then stopped (awaited runs end with
// kube.ErrStopped and their Jobs keep running for the next daemon to
// adopt) before the runs are cancelled.
func (d *daemon) lead(ctx context.Context) error {
	if d.electing {
		// A standby sharing the store waited here for the leader's lock.
		d.log.Info("leading: taking the store lock", "store", d.cfg.Load().Store.Path)
		unlock, err := claimStore(ctx, d.log, d.cfg.Load().Store.Path, d.cfg.Load().Terraform.WorkDir, 0)
		if err != nil {
			return err
		}
		defer unlock()
	}
	var interrupted []store.Run
	if d.kube == nil {
		// Runs the previous process did not finish (kill -9, crash,
		// shutdown) are marked interrupted and run again below. Nothing
		// was queued by this process yet: the API refuses runs until
		// leading is set. (Kubernetes mode does this after adopting the
		// Jobs still running.)
		var err error
		if interrupted, err = d.store.MarkInterrupted(ctx, time.Now()); err != nil {
			return err
		}
	}
	defer d.leading.Store(false)
	g, gctx := errgroup.WithContext(ctx)
	runCtx := gctx
	// keep is the runs whose detection Job is adopted: they stay running
	// and are finished, under their own id, when the Job ends.
	var keep []string
	if d.kube != nil {
		watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(gctx))
		defer stopWatch()
		watchDone := make(chan error, 1)
		go func() { watchDone <- d.kube.runner.Watch(watchCtx) }()
		actx, cancel := context.WithTimeout(gctx, 2*time.Minute)
		adopted, err := d.kube.runner.Adopt(actx)
		cancel()
		if err != nil {
			stopWatch()
			<-watchDone
			return fmt.Errorf("kubernetes runner: adopt running jobs: %w", err)
		}
		for _, a := range adopted {
			if !a.Remediation {
				keep = append(keep, a.RunID)
			}
		}
		// Runs the previous process did not finish (kill -9, crash,
		// shutdown) are marked interrupted and run again below, except
		// those whose Job was just adopted. Nothing was queued by this
		// process yet: the API refuses runs until leading is set.
		interrupted, err = d.store.MarkInterrupted(ctx, time.Now(), keep...)
		if err != nil {
			stopWatch()
			<-watchDone
			return err
		}
		d.mu.Lock()
		for _, a := range adopted {
			d.adopted[a.Workspace] = true
		}
		d.mu.Unlock()
		rctx, cancelRuns := context.WithCancel(context.WithoutCancel(gctx))
		runCtx = rctx
		g.Go(func() error {
			var err error
			select {
			case <-gctx.Done():
				d.stopping.Store(true) // no run starts from here on
				stopWatch()
				<-watchDone
			case err = <-watchDone:
				d.stopping.Store(true)
				err = fmt.Errorf("kubernetes runner stopped: %w", err)
			}
			cancelRuns()
			return err
		})
		for _, a := range adopted {
			g.Go(func() error { d.awaitAdopted(runCtx, a); return nil })
		}
	}
	d.leading.Store(true)
	g.Go(func() error { return d.sched.Run(runCtx) })
	g.Go(func() error { return d.rem.Run(gctx) })
	seen := map[string]bool{}
	for _, r := range interrupted {
		d.mu.Lock()
		skip := seen[r.Workspace] || d.adopted[r.Workspace]
		d.mu.Unlock()
		if skip {
			continue
		}
		seen[r.Workspace] = true
		d.log.Info("re-running interrupted run", "workspace", r.Workspace, "run_id", r.ID)
		if err := d.sched.Trigger(r.Workspace, "rerun"); err != nil && !errors.Is(err, schedule.ErrUnknownJob) {
			d.log.Warn("re-run not queued", "workspace", r.Workspace, "err", err)
		}
	}
	d.runNew(d.cfg.Load())
	return g.Wait()
}

// once runs every workspace once through the scheduler's queue (so the
// concurrency cap holds), records the runs and returns the audit exit code.
func (d *daemon) once(ctx context.Context, cfg *config.Config) (int, error) {
	var results []drift.Result
	var mu sync.Mutex
	done := make(chan struct{}, len(cfg.Workspaces))
	d.onResult = func(r drift.Result) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
		done <- struct{}{}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = d.sched.Run(ctx) }()
	go func() { defer wg.Done(); _ = d.outbox.Run(ctx) }()
	start := time.Now()
	for _, w := range cfg.Workspaces {
		if err := d.sched.Trigger(w.Name, "once"); err != nil {
			cancel()
			wg.Wait()
			return report.ExitError, err
		}
	}
	for range cfg.Workspaces {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	d.drainOutbox(ctx, 2*time.Minute)
	interrupted := ctx.Err() != nil
	cancel()
	wg.Wait()
	if interrupted {
		return report.ExitError, errors.New("interrupted")
	}
	rep := report.New(start, time.Now(), results)
	return rep.ExitCode(false), nil
}

// drainOutbox waits (at most max) until no notification is pending, so a
// --once run delivers its alerts before it exits. Undelivered ones stay in
// the store for the next start.
func (d *daemon) drainOutbox(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		stats, err := d.store.OutboxStats(ctx)
		if err != nil {
			return
		}
		pending := 0
		for _, c := range stats {
			pending += c.Pending
		}
		if pending == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	d.log.Warn("notifications still pending at exit; they are delivered at the next start")
}

// notifierStatus reports the outbox per configured notifier.
func (d *daemon) notifierStatus(ctx context.Context) ([]server.NotifierStatus, error) {
	stats, err := d.store.OutboxStats(ctx)
	if err != nil {
		return nil, err
	}
	cfg := d.cfg.Load()
	out := make([]server.NotifierStatus, 0, len(cfg.Notifiers))
	for _, n := range cfg.Notifiers {
		c := stats[n.Name]
		ns := server.NotifierStatus{Name: n.Name, Pending: c.Pending, Dead: c.Dead, LastError: c.LastError}
		if !c.OldestPending.IsZero() {
			t := c.OldestPending
			ns.OldestPending = &t
		}
		out = append(out, ns)
	}
	return out, nil
}

// snapshot feeds the per-workspace metrics: configured workspaces only.
func (d *daemon) snapshot() []metrics.WorkspaceSnapshot {
	cfg := d.cfg.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]metrics.WorkspaceSnapshot, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		s, ok := d.states[w.Name]
		snap := metrics.WorkspaceSnapshot{Name: w.Name, Status: "unknown"}
		if ok {
			snap.Status, snap.Counts = s.Status, drift.CountFindings(s.Findings)
			snap.LastRunAt, snap.LastSuccessAt, snap.StatusSince = s.LastRunAt, s.LastSuccessAt, s.Since
		}
		out = append(out, snap)
	}
	return out
}

func (d *daemon) workspaceInfo() []server.WorkspaceInfo {
	cfg := d.cfg.Load()
	out := make([]server.WorkspaceInfo, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		next, _ := d.sched.Next(w.Name)
		out = append(out, server.WorkspaceInfo{Name: w.Name, Owner: w.Owner, Schedule: w.Schedule, Labels: w.Labels, NextRun: next})
	}
	return out
}

func targetMap(cfg *config.Config, owner string) (map[string]audit.Target, error) {
	ts, err := Targets(cfg, Filter{})
	if err != nil {
		return nil, err
	}
	// The probe is cached: an error was already reported at start-up.
	iso, _ := sandbox.DetectIsolation(cfg.Terraform.Sandbox)
	m := make(map[string]audit.Target, len(ts))
	for _, t := range ts {
		t.Request.Owner = owner
		t.Request.Jail = iso.Bwrap
		m[t.Name] = t
	}
	return m, nil
}

func jobs(cfg *config.Config) []schedule.Job {
	out := make([]schedule.Job, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		out = append(out, schedule.Job{Name: w.Name, Spec: w.Schedule})
	}
	return out
}
