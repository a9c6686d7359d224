package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
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
	"github.com/driftwatch/driftwatch/internal/runner/kube"
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

// errStandby is /readyz's answer, and the API trigger's and cancel's
// (503), while the daemon does not schedule. A standby that knows the
// leader says who it is (standbyError).
var errStandby = errors.New("not scheduling: a standby (another daemon holds the leader Lease), starting or stopping")

// standbyError is errStandby naming the Lease holder.
type standbyError struct{ leader string }

func (e standbyError) Error() string {
	return "unavailable: this replica is a standby; the leader is " + e.leader
}

func (e standbyError) Is(target error) bool { return target == errStandby }

func (d *daemon) ready() error {
	if !d.leading.Load() {
		return d.notLeading()
	}
	return nil
}

// notLeading is errStandby, as a standbyError when another daemon holds
// the Lease.
func (d *daemon) notLeading() error {
	leader := d.leader()
	if id := d.leaseID.Load(); leader != "" && (id == nil || leader != *id) {
		return standbyError{leader: leader}
	}
	return errStandby
}

// leader is the Lease holder's identity as the elector last observed it
// ("": unknown, or no leader election).
func (d *daemon) leader() string {
	if e := d.elector.Load(); e != nil {
		return e.GetLeader()
	}
	return ""
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

// runOne is the scheduler's job: one run of one workspace, recorded in the
// store. A run cut short by shutdown is left "running" in the store, so the
// next start marks it interrupted and runs it again (or, in kubernetes mode
// with its Job still running, adopts the Job and finishes the run).
func (d *daemon) runOne(ctx context.Context, r schedule.QueuedRun) {
	if r.Trigger == triggerRemediate {
		d.rem.Apply(ctx, r.Name)
		return
	}
	d.detectRun(ctx, r)
}

// queued records a run the scheduler queued (OnEnqueue): in the registry,
// with a live log that says it waits, and in the store as queued, so that
// it can be looked up, followed and cancelled before it starts. Remediation
// applies are not recorded here: apply records its run when it starts, and
// a waiting apply is an approved remediation (rejecting it stops it).
func (d *daemon) queued(r schedule.QueuedRun) {
	if r.Trigger == triggerRemediate {
		return
	}
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	l := d.newRunLog(r.Name)
	l.Printf("== queued (trigger %s): waiting for a run slot ==", r.Trigger)
	d.runs.Add(r.ID, l, nil)
	run := store.Run{ID: r.ID, Workspace: r.Name, Trigger: r.Trigger, StartedAt: r.QueuedAt.UTC(), Status: store.RunQueued}
	if err := d.store.QueueRun(context.Background(), run); err != nil {
		d.log.Error("store: queue run", "workspace", r.Name, "run_id", r.ID, "err", err)
	}
}

// newRunLog is a run's log. For a workspace with log_plan_text its first
// line is runlog.ValuesNotice, so the server serves it only to an
// authenticated reader, from the first line on.
func (d *daemon) newRunLog(workspace string) *runlog.Log {
	l := runlog.New(d.cfg.Load().Store.MaxLogBytes, nil)
	if t, ok := (*d.targets.Load())[workspace]; ok && t.Request.LogPlanText {
		l.Printf("%s", runlog.ValuesNotice)
	}
	return l
}

// dropQueued records a queued run that ends without starting as cancelled,
// with the reason, and ends its log. A run that is not queued (it started,
// or was cancelled already) is left alone.
func (d *daemon) dropQueued(ctx context.Context, r schedule.QueuedRun, reason string) {
	if r.ID == "" || r.Trigger == triggerRemediate {
		return // not a queued run (see queued)
	}
	log := d.log.With("workspace", r.Name, "run_id", r.ID)
	run := store.Run{ID: r.ID, Workspace: r.Name, Trigger: r.Trigger, StartedAt: r.QueuedAt.UTC(),
		FinishedAt: time.Now().UTC(), Status: store.RunCancelled, Error: reason}
	if err := d.store.FinishQueuedRun(context.WithoutCancel(ctx), run); err != nil {
		log.Warn("store: finish queued run", "err", err)
		return
	}
	l := d.runs.Live(r.ID)
	if l == nil { // queued's registration was lost: the log is this line
		l = d.newRunLog(r.Name)
	}
	l.Printf("== cancelled while queued: %s ==", reason)
	d.saveRunLog(ctx, log, r.ID, l, store.RunCancelled)
	d.runs.Remove(r.ID)
	log.Info("queued run cancelled; it never started", "reason", reason)
}

// skipQueued forgets a queued run that is skipped like a slot that comes
// while its workspace is busy: such a slot is no run, so its record is
// deleted and it is counted as a skipped slot.
func (d *daemon) skipQueued(ctx context.Context, r schedule.QueuedRun) {
	d.metrics.Skipped(r.Name)
	if r.ID == "" {
		return
	}
	if err := d.store.DeleteQueuedRun(context.WithoutCancel(ctx), r.ID); err != nil {
		d.log.Warn("store: delete skipped queued run", "workspace", r.Name, "run_id", r.ID, "err", err)
	}
	if l := d.runs.Live(r.ID); l != nil {
		l.Close("skipped")
	}
	d.runs.Remove(r.ID)
}

// cancel is the API's cancel. A queued run leaves the queue and is
// recorded cancelled at once (true). A running one (scheduled, or not:
// an adopted Job's, a remediation's verification) has its ctx cancelled
// with runlog.ErrCancelled: the runner stops Terraform or deletes the Job,
// and detectWith records it cancelled.
func (d *daemon) cancel(id string) (queued bool, err error) {
	if d.electing && !d.leading.Load() {
		// A standby runs nothing: the leader has the run.
		return false, d.notLeading()
	}
	d.queueMu.Lock()
	defer d.queueMu.Unlock()
	r, queued, err := d.sched.Cancel(id, runlog.ErrCancelled)
	switch {
	case errors.Is(err, schedule.ErrNoSuchRun):
		return false, d.runs.Cancel(id)
	case err != nil:
		return false, err
	case queued:
		d.dropQueued(context.Background(), r, "cancelled by request")
	}
	return queued, nil
}

// detect is a detection run outside the queue (the verification after a
// remediation, in the remediation's slot).
func (d *daemon) detect(ctx context.Context, name, trigger string) {
	d.detectRun(ctx, schedule.QueuedRun{Name: name, Trigger: trigger})
}

// detectRun is one detection run of one workspace: r is the queued run (no
// ID: not queued).
func (d *daemon) detectRun(ctx context.Context, r schedule.QueuedRun) {
	d.mu.Lock()
	busy := d.adopted[r.Name]
	d.mu.Unlock()
	if busy {
		d.log.Info("run skipped: an adopted Job of the workspace is still running", "workspace", r.Name, "trigger", r.Trigger, "run_id", r.ID)
		d.skipQueued(ctx, r)
		return
	}
	d.detectWith(ctx, r, d.auditor, nil)
}

// awaitAdopted records the outcome of a Job a previous daemon started. A
// detection Job's run was left running by lead (MarkInterrupted kept it),
// so its outcome finishes that run, under its own id. A remediation Job's
// outcome is recorded on its remediation and the verification detection
// that follows is a new run with trigger "adopted", as is a detection Job's
// outcome when the store has no running run with its id.
func (d *daemon) awaitAdopted(ctx context.Context, a *kube.Adopted) {
	d.log.Info("awaiting adopted job", "workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job)
	r := schedule.QueuedRun{Name: a.Workspace, Trigger: "adopted"}
	var resume *store.Run
	if !a.Remediation {
		run, err := d.store.Run(ctx, a.RunID)
		switch {
		case err != nil:
			d.log.Warn("adopted job: its run is not in the store; recording its outcome as a new run",
				"workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job, "err", err)
		case run.Status != store.RunRunning || run.Workspace != a.Workspace:
			d.log.Warn("adopted job: its run is not running; recording its outcome as a new run",
				"workspace", a.Workspace, "adopted_run_id", a.RunID, "job", a.Job, "status", run.Status, "run_workspace", run.Workspace)
		default:
			resume = &run
			r = schedule.QueuedRun{ID: run.ID, Name: a.Workspace, Trigger: run.Trigger}
		}
	}
	d.detectWith(ctx, r, &audit.Auditor{Runner: adoptedRunner{a: a, d: d}, Logger: d.log}, resume)
	d.mu.Lock()
	delete(d.adopted, a.Workspace)
	d.mu.Unlock()
}

// trigger is the API's manual trigger: it returns the queued run's id, or
// ErrBusy (409) with the id of the run already queued or running (none
// while an adopted Job or a remediation apply of the workspace runs).
func (d *daemon) trigger(name string) (string, error) {
	if !d.leading.Load() {
		return "", d.notLeading()
	}
	d.mu.Lock()
	busy := d.adopted[name]
	d.mu.Unlock()
	if busy {
		return "", fmt.Errorf("%w (adopted kubernetes job still running)", schedule.ErrBusy)
	}
	r, err := d.sched.Queue(name, schedule.TriggerManual)
	if r.Trigger == triggerRemediate {
		// Busy with an apply: its run is recorded under its own id.
		return "", err
	}
	return r.ID, err
}

// detectWith runs and records one detection run: the queued run r (its
// record and live log exist), or a new run when r has no ID. With resume
// (r.ID is its ID), the run is an adopted Job's that a previous daemon
// recorded as running: it is not started again but finished.
func (d *daemon) detectWith(ctx context.Context, r schedule.QueuedRun, auditor *audit.Auditor, resume *store.Run) {
	if d.stopping.Load() {
		// Shutting down or lost the Lease: start nothing. A queued run's
		// record is marked interrupted (and re-run) at the next start.
		return
	}
	name, trigger := r.Name, r.Trigger
	t, ok := (*d.targets.Load())[name]
	if !ok && resume == nil {
		d.dropQueued(ctx, r, "the workspace was removed from the config while the run was queued")
		return
	}
	if !ok {
		// An adopted Job of a workspace no longer in the config: its run
		// ends interrupted, as it would have at start.
		run := *resume
		run.FinishedAt, run.Status = time.Now().UTC(), store.RunInterrupted
		run.Error = "the workspace was removed from the config while its adopted Job ran"
		if err := d.store.FinishRunOnly(context.WithoutCancel(ctx), run); err != nil {
			d.log.Warn("store: finish adopted run", "workspace", name, "run_id", run.ID, "err", err)
		}
		return
	}
	if errors.Is(context.Cause(ctx), runlog.ErrCancelled) && resume == nil {
		// Cancelled just as the scheduler dispatched it: start nothing.
		d.dropQueued(ctx, r, "cancelled by request")
		return
	}
	t.Request.RunID = r.ID
	if r.ID == "" {
		t.Request.RunID = newRunID()
	}
	log := d.log.With("workspace", name, "run_id", t.Request.RunID)
	// The run's own log (redacted by the runner; head and tail kept),
	// created when it was queued, and a cancel function for POST
	// /api/v1/runs/{id}/cancel.
	runLog := d.runs.Live(t.Request.RunID)
	if runLog == nil {
		runLog = d.newRunLog(name)
	}
	if t.Request.LogPlanText && !runlog.HoldsValues(runLog.Bytes()) {
		// Opted in after this log began without the notice (a reload while
		// queued): its readers were not told to authenticate, so no values.
		t.Request.LogPlanText = false
	}
	run := store.Run{ID: t.Request.RunID, Workspace: name, Trigger: trigger, StartedAt: time.Now().UTC(), Status: store.RunRunning}
	switch {
	case resume != nil:
		// Started by a previous daemon: it goes on under its id.
		run.StartedAt = resume.StartedAt
		log.Info("run adopted", "trigger", trigger)
		runLog.Printf("== adopted: its Kubernetes Job was started by a previous daemon (started %s); awaiting its result ==",
			run.StartedAt.UTC().Format(time.RFC3339))
	default:
		// Recorded even if a cancel arrives meanwhile: the run then ends
		// at once, recorded cancelled.
		if err := d.store.StartQueuedRun(context.WithoutCancel(ctx), run); err != nil {
			log.Error("store: start run", "err", err)
			runLog.Close(string(drift.StatusErrored))
			d.runs.Remove(run.ID)
			return
		}
		log.Info("run started", "trigger", trigger)
		if r.ID != "" {
			runLog.Printf("== started after %s in the queue ==", run.StartedAt.Sub(r.QueuedAt).Round(time.Millisecond))
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	d.runs.Add(run.ID, runLog, cancel)
	defer d.runs.Remove(run.ID)
	t.Request.Log = runLog
	defer func() {
		// A bug must not leave the run "running" and its log followers
		// waiting forever: record it errored, then let the scheduler's
		// recovery log the panic.
		if p := recover(); p != nil {
			run.FinishedAt = time.Now().UTC()
			run.Status, run.Error = drift.StatusErrored, "internal error: the run panicked (see the daemon log)"
			_ = d.store.FinishRunOnly(context.WithoutCancel(ctx), run)
			d.saveRunLog(ctx, log, run.ID, runLog, drift.StatusErrored)
			panic(p)
		}
	}()
	res, tfPlan := auditor.CheckPlan(runCtx, t)
	if errors.Is(context.Cause(runCtx), runlog.ErrCancelled) {
		// Cancelled: neither clean nor errored; state and incidents stay.
		run.FinishedAt = time.Now().UTC()
		run.Status, run.Error, run.Tool, run.Phases = store.RunCancelled, "cancelled by request", res.Tool, res.Phases
		if err := d.store.FinishRunOnly(context.WithoutCancel(ctx), run); err != nil {
			log.Error("store: finish cancelled run", "err", err)
		}
		d.saveRunLog(ctx, log, run.ID, runLog, store.RunCancelled)
		log.Info("run cancelled")
		return
	}
	if ctx.Err() != nil || d.stopping.Load() {
		// Kubernetes mode: the Job keeps running and the next daemon
		// adopts it.
		log.Info("run interrupted by shutdown; it will be re-run at the next start")
		return
	}
	run.FinishedAt = res.Started.Add(res.Duration).UTC()
	run.Status, run.Error, run.Tool, run.Findings, run.Phases = res.Status, res.Error, res.Tool, res.Findings, res.Phases
	// Record even if the daemon is stopping: the result is already paid
	// for. Incident changes and their notifications are written in the same
	// transaction, so a crash can lose neither.
	plan := (*d.alerts.Load())[name]
	_, after, err := d.store.FinishRunWithOutcome(context.WithoutCancel(ctx), run, plan.outcome(time.Now().UTC(), run.ID))
	if err != nil {
		log.Error("store: finish run", "err", err)
		return
	}
	d.outbox.Wake()
	d.saveRunLog(ctx, log, run.ID, runLog, run.Status)
	d.mu.Lock()
	d.states[name] = after
	d.mu.Unlock()
	d.rem.AfterDetect(ctx, t, run.ID, res, tfPlan)
	total := drift.Phase{Name: "total", Duration: res.Duration}
	d.metrics.RunFinished(res.Status, append(res.Phases, total))
	if d.onResult != nil {
		d.onResult(res)
	}
}

// saveRunLog stores a finished run's log and ends its live followers with
// the verdict: stored first, so a reader finds it in one place or the other.
func (d *daemon) saveRunLog(ctx context.Context, log *slog.Logger, runID string, l *runlog.Log, verdict drift.Status) {
	if err := d.store.SaveRunLog(context.WithoutCancel(ctx), runID, l.Bytes()); err != nil {
		log.Warn("store: save run log", "err", err)
	}
	l.Close(string(verdict))
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
