package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/slackinteract"
	"github.com/driftwatch/driftwatch/internal/outbox"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/remediation"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/run"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/silence"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
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
	// StoreLockWait is how long a daemon without leader election waits for
	// its store's lock. Default leader.StoreLockWait.
	StoreLockWait time.Duration
}

// daemon is the running service's parts: the current config (swapped on
// reload) and what was built from it, the store, the run lifecycle, the
// remediation controller, the outbox, metrics and who leads.
type daemon struct {
	log   *slog.Logger
	owner string // terraform.Request.Owner of every run (leader.StoreOwner)
	// isolation is what local runs are confined with (/api/v1/status).
	isolation sandbox.Isolation
	cfg       atomic.Pointer[config.Config]
	targets   atomic.Pointer[map[string]pipeline.Target]
	alerts    atomic.Pointer[map[string]incident.Plan]
	store     store.DaemonStore
	outbox    *outbox.Dispatcher
	metrics   *metrics.Metrics
	reg       *prometheus.Registry
	runs      *run.Manager
	rem       *remediation.Controller
	leader    *leader.State
	// electing is set when leader election is on: lead takes the store
	// lock.
	electing bool
	// kube is the kubernetes runner mode (nil: local).
	kube *kubeRuntime
	// holds are the silences and maintenance windows (silences.go).
	holds silence.Book
	// released wakes the release of held messages (a silence ended).
	released chan struct{}
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
	if o.StoreLockWait <= 0 {
		o.StoreLockWait = leader.StoreLockWait
	}
	cfg, err := config.LoadFile(o.ConfigPath)
	if err != nil {
		return report.ExitError, fmt.Errorf("invalid config:\n%w", err)
	}
	kubeMode := cfg.Runner.Mode == config.RunnerModeKubernetes
	if kubeMode && o.Once {
		return report.ExitError, errors.New("daemon --once runs locally: it needs runner.mode local (or use `driftwatch audit`)")
	}
	if o.Once && cfg.HasGitDiscovery() {
		// A long-running daemon discovers in its reload loop; one pass
		// needs its git roots before it starts.
		dctx, cancel := context.WithTimeout(ctx, discoverTimeout)
		err := cfg.DiscoverGit(dctx)
		cancel()
		if err != nil {
			return report.ExitError, fmt.Errorf("discovery: %w", err)
		}
	}
	// One scheduling daemon per store. With leader election a standby may
	// share the store (it serves the status page and read API from it):
	// the lock is then taken when leading (see lead).
	electing := kubeMode && cfg.Runner.LeaderElection.Enabled
	if !electing {
		unlock, err := leader.ClaimStore(ctx, o.Logger, cfg.Store.Path, cfg.Terraform.WorkDir, o.StoreLockWait)
		if err != nil {
			return report.ExitError, err
		}
		defer unlock()
	}
	st, err := sqlite.Open(ctx, cfg.Store.Path, o.Logger)
	if err != nil {
		return report.ExitError, err
	}
	defer st.Close()
	d, err := newDaemon(ctx, cfg, st, o.Logger, nil)
	if err != nil {
		return report.ExitError, err
	}
	d.electing = electing
	if o.Once {
		return d.once(ctx, cfg)
	}
	srv, err := d.server(cfg)
	if err != nil {
		return report.ExitError, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.outbox.Run(gctx) })
	g.Go(func() error { return srv.Run(gctx, cfg.Server.Listen) })
	if d.kube != nil {
		g.Go(func() error { return d.kube.serveCallback(gctx) })
	}
	g.Go(func() error { d.reloadLoop(gctx, o.ConfigPath, o.ReloadInterval); return nil })
	g.Go(func() error {
		d.runs.Retain(gctx, func() (int, time.Duration) {
			s := d.cfg.Load().Store
			return s.KeepRuns, time.Duration(s.MaxAge)
		})
		return nil
	})
	if le := cfg.Runner.LeaderElection; electing {
		// Only the Lease holder schedules and runs; losing the Lease ends
		// the process (after stopping scheduling) so that it campaigns
		// again from a clean state.
		g.Go(func() error { return d.leader.Campaign(gctx, d.kube.client, le, cfg.Runner.LeaseNamespace(), d.lead) })
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

// newDaemon builds the daemon's parts from cfg on the open store st: the
// sandbox mode, the run targets and alert plans, the runner (local, or
// Kubernetes Jobs), metrics, the run lifecycle with its scheduler, the
// remediation controller, the notifiers and the outbox. A non-nil detect
// replaces the runner of detection runs (tests).
func newDaemon(ctx context.Context, cfg *config.Config, st store.DaemonStore, log *slog.Logger, detect runner.Runner) (*daemon, error) {
	d := &daemon{log: log, owner: leader.StoreOwner(cfg.Store.Path), store: st, leader: leader.New(log)}
	d.released = make(chan struct{}, 1)
	silences, err := st.Silences(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	d.holds.SetSilences(silences)
	d.isolation = sandbox.Isolation{Mode: "none", Reason: "runs are Kubernetes Jobs: the pod is their sandbox",
		Network: "host", NetworkReason: "runs are Kubernetes Jobs: the chart's NetworkPolicy confines them"}
	// The daemon re-checks the same workspaces: it keeps their initialised
	// working directories between runs.
	lr := local.New(log)
	lr.KeepWorkDirs = true
	auditor := &pipeline.Auditor{Runner: lr, Logger: log}
	if cfg.Runner.Mode == config.RunnerModeKubernetes {
		var err error
		if d.kube, err = newKubeRuntime(cfg, log, d.mayApply); err != nil {
			return nil, err
		}
		auditor = &pipeline.Auditor{Runner: d.kube.runner, Logger: log}
	} else {
		var err error
		if d.isolation, err = isolation(cfg, log); err != nil {
			return nil, err
		}
		if err := cfg.CheckJailReach(d.isolation.Network == "isolated", d.isolation.NetworkReason); err != nil {
			return nil, err
		}
	}
	if detect != nil {
		auditor = &pipeline.Auditor{Runner: detect, Logger: log}
	}
	targets, err := targetMap(cfg, d.owner)
	if err != nil {
		return nil, err
	}
	d.setConfig(cfg, targets)
	d.reg = prometheus.NewRegistry()
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.metrics = metrics.New(d.reg, d.snapshot)
	if h, ok := st.(interface{ WriteHealth() sqlite.WriteHealth }); ok {
		metrics.RegisterStoreHealth(d.reg, func() (uint64, bool) { w := h.WriteHealth(); return w.Errors, w.Failing })
	}
	// The controller reaches the runs through remediationHost, at call
	// time: d.runs is set before anything runs.
	if d.rem, err = newRemediator(ctx, d, metrics.NewRemediations(d.reg)); err != nil {
		return nil, err
	}
	d.runs, err = run.New(ctx, run.Options{
		Store: st, Logger: log, Auditor: auditor, Metrics: d.metrics,
		Schedule: schedule.Options{MaxConcurrent: cfg.MaxConcurrentRuns, Jitter: time.Duration(cfg.Defaults.Jitter), Clock: schedulerClock(),
			AllowSubMinute: cfg.AllowSubMinuteSchedules},
		Target: func(name string) (pipeline.Target, bool) {
			t, ok := (*d.targets.Load())[name]
			return t, ok
		},
		Outcome: func(name string, now time.Time, runID string) store.Outcome {
			return (*d.alerts.Load())[name].Outcome(now, runID, drift.NewRunID)
		},
		MaxLogBytes: func() int { return d.cfg.Load().Store.MaxLogBytes },
		Leading:     d.leader.Ready,
		Apply:       d.rem.Apply,
		AfterDetect: d.rem.AfterDetect,
		Recorded:    func() { d.outbox.Wake() },
	})
	if err != nil {
		return nil, err
	}
	if err := d.runs.SetJobs(jobs(cfg)); err != nil {
		return nil, err
	}
	ns, err := notifiers.Build(cfg.NotifierSpecs(), log)
	if err != nil {
		return nil, err
	}
	d.outbox, err = outbox.New(outbox.Options{
		Store: st, Notifiers: ns, Logger: log,
		OnResult: d.metrics.NotificationResult, OnPending: d.metrics.SetNotificationsPending,
	})
	return d, err
}

// setConfig makes cfg the current config, with its run targets (built by
// targetMap, which reads every secret file: once per load) and alert
// plans (start and reload).
func (d *daemon) setConfig(cfg *config.Config, targets map[string]pipeline.Target) {
	plans := incident.Plans(cfg)
	for _, w := range cfg.Workspaces {
		p := plans[w.Name]
		p.Held = func(at time.Time) bool {
			_, held := d.holds.Held(w.Name, w.Labels, at)
			return held
		}
		plans[w.Name] = p
	}
	if windows, err := silence.Windows(cfg.MaintenanceWindows); err == nil { // validated with the config
		d.holds.SetWindows(windows)
	}
	d.cfg.Store(cfg)
	d.targets.Store(&targets)
	d.alerts.Store(&plans)
}

// server is the HTTP server: status page, API (through control) and
// metrics. The run pods' result routes are not among them: in kubernetes
// mode they have a listener of their own (kubeRuntime.serveCallback).
func (d *daemon) server(cfg *config.Config) (*server.Server, error) {
	// The callback URL's host names the daemon (its Service, say): an
	// allowed Host of the main server too.
	var callbackURL string
	if d.kube != nil {
		callbackURL = cfg.Runner.Kubernetes.Kube().CallbackURL
	}
	// Slack's interactivity requests (the Approve / Reject buttons) carry
	// no bearer token: the handler authenticates them by their signature.
	// The notifiers are read from the current config at each request, so
	// a reload (approvers, a rotated signing secret) applies at once.
	audit := limitAudit(auditRecorder(d.store), d.log, d.reg)
	slackHandler, err := slackinteract.New(slackinteract.Options{
		Notifiers: func() ([]slackinteract.Notifier, error) {
			var out []slackinteract.Notifier
			for _, n := range d.cfg.Load().Notifiers {
				s := n.Slack
				if n.Type != "slack" || s == nil || s.SigningSecretFile == "" {
					continue
				}
				b, err := os.ReadFile(s.SigningSecretFile)
				if err != nil {
					return nil, fmt.Errorf("notifier %q: signing_secret_file: %w", n.Name, err) // the path, not the content
				}
				in := slackinteract.Notifier{Name: n.Name, SigningSecret: strings.TrimSpace(string(b)), Approvers: s.Approvers, Channel: s.Channel}
				if u, err := url.Parse(s.APIURL); err == nil && s.APIURL != "" {
					in.ResponseOrigin = u.Scheme + "://" + u.Host // Slack redirected (tests, proxies): its response_urls too
				}
				out = append(out, in)
			}
			return out, nil
		},
		Decider:         remediationControl{d.rem},
		WithActor:       remediation.WithActor,
		HashMismatchErr: server.ErrHashMismatch,
		Logger:          d.log,
		OnDecision:      slackAudit(audit, d.log),
		OnRefused:       slackRefusalAudit(audit, d.log),
		Replay:          replayStore(d.store),
	})
	if err != nil {
		return nil, err
	}
	handlers := map[string]http.Handler{slackinteract.Route: slackHandler}
	return server.New(server.Options{
		Store:       d.store,
		Logs:        d.store,
		Incidents:   d.store,
		Audit:       audit,
		Control:     control{d: d, RemediationControl: remediationControl{d.rem}},
		Handlers:    handlers,
		Gatherer:    d.reg,
		Config:      cfg.Server,
		CallbackURL: callbackURL,
		Logger:      d.log,
		Version:     version.Version,
		Sandbox: server.SandboxStatus{Mode: d.isolation.Mode, Reason: d.isolation.Reason,
			Network: d.isolation.Network, NetworkReason: d.isolation.NetworkReason},
		Leader: d.leader.Leader,
	})
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
// other runs a previous process left are recovered (run.Manager.Recover),
// and the scheduler runs until ctx ends. On the way out scheduling stops
// first; in kubernetes mode Watch is then stopped (awaited runs end with
// kube.ErrStopped and their Jobs keep running for the next daemon to
// adopt) before the runs are cancelled.
func (d *daemon) lead(ctx context.Context) error {
	if d.electing {
		// A standby sharing the store waited here for the leader's lock.
		cfg := d.cfg.Load()
		d.log.Info("leading: taking the store lock", "store", cfg.Store.Path)
		unlock, err := leader.ClaimStore(ctx, d.log, cfg.Store.Path, cfg.Terraform.WorkDir, 0)
		if err != nil {
			return err
		}
		defer unlock()
	}
	defer d.leader.SetLeading(false)
	g, gctx := errgroup.WithContext(ctx)
	runCtx := gctx
	var adopted []run.Adopted
	var keep []string // adopted Jobs' runs: finished under their ids
	if d.kube != nil {
		var err error
		if runCtx, adopted, err = d.kube.adopt(gctx, g, d.runs, d.rem); err != nil {
			return err
		}
		for _, a := range adopted {
			keep = append(keep, a.RunID)
		}
	}
	// Nothing was queued by this process yet: the API refuses runs until
	// leading is set.
	if err := d.runs.Recover(ctx, keep...); err != nil {
		g.Go(func() error { return err }) // stops the Watch (kubernetes mode)
		return g.Wait()
	}
	for _, a := range adopted {
		g.Go(func() error { d.runs.AwaitAdopted(runCtx, a); return nil })
	}
	// A standby became leader: the silences its predecessor added.
	silences, err := d.store.Silences(ctx, time.Now())
	if err != nil {
		g.Go(func() error { return err })
		return g.Wait()
	}
	d.holds.SetSilences(silences)
	d.leader.SetLeading(true)
	g.Go(func() error { return d.runs.Schedule(runCtx) })
	g.Go(func() error { d.releaseLoop(gctx); return nil })
	g.Go(func() error { return d.rem.Run(gctx) })
	d.runs.QueueUnchecked(workspaceNames(d.cfg.Load()))
	return g.Wait()
}

// once recovers what a previous process left, runs every workspace once
// through the scheduler's queue (so the concurrency cap holds), records
// the runs, delivers their alerts and returns the audit exit code.
func (d *daemon) once(ctx context.Context, cfg *config.Config) (int, error) {
	if err := d.runs.Recover(ctx); err != nil {
		return report.ExitError, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // ends the scheduler and the outbox, then wait for them
		wg.Wait()
	}()
	wg.Add(2)
	go func() { defer wg.Done(); _ = d.runs.Schedule(ctx) }()
	go func() { defer wg.Done(); _ = d.outbox.Run(ctx) }()
	start := time.Now()
	results, err := d.runs.Once(ctx, workspaceNames(cfg))
	if err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		return report.ExitError, err
	}
	if !d.outbox.Drain(ctx, 2*time.Minute) {
		d.log.Warn("notifications still pending at exit; they are delivered at the next start")
	}
	if ctx.Err() != nil {
		return report.ExitError, errors.New("interrupted")
	}
	return report.New(start, time.Now(), results).ExitCode(false), nil
}

// snapshot feeds the per-workspace metrics: configured workspaces only.
func (d *daemon) snapshot() []metrics.WorkspaceSnapshot {
	cfg := d.cfg.Load()
	out := make([]metrics.WorkspaceSnapshot, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		s, ok := d.runs.State(w.Name)
		snap := metrics.WorkspaceSnapshot{Name: w.Name, Status: "unknown"}
		if ok {
			snap.Status, snap.Counts = s.Status, drift.CountFindings(s.Findings)
			snap.LastRunAt, snap.LastSuccessAt, snap.StatusSince = s.LastRunAt, s.LastSuccessAt, s.Since
		}
		out = append(out, snap)
	}
	return out
}

func targetMap(cfg *config.Config, owner string) (map[string]pipeline.Target, error) {
	ts, err := pipeline.Targets(cfg, pipeline.Filter{})
	if err != nil {
		return nil, err
	}
	// The probe is cached: an error was already reported at start-up.
	iso, _ := sandbox.DetectIsolation(cfg.Terraform.Sandbox, cfg.Terraform.SandboxNetwork)
	m := make(map[string]pipeline.Target, len(ts))
	for _, t := range ts {
		t.Request.Owner = owner
		t.Request.Jail, t.Request.JailNet = iso.Bwrap, iso.Pasta
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

func workspaceNames(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		out = append(out, w.Name)
	}
	return out
}
