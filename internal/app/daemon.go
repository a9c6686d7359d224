package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/incident/fleet"
	"github.com/driftwatch/driftwatch/internal/inventory"
	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/slackinteract"
	"github.com/driftwatch/driftwatch/internal/outbox"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/remediation"
	"github.com/driftwatch/driftwatch/internal/remediation/acceptance"
	"github.com/driftwatch/driftwatch/internal/report"
	"github.com/driftwatch/driftwatch/internal/run"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/local"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/silence"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/terraform"
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
	// (SIGHUP reloads at once). Default 5s (inventory.Options.Every).
	ReloadInterval time.Duration
	// StoreLockWait is how long a daemon without leader election waits for
	// its store's lock. Default leader.StoreLockWait (leader.ClaimAtStart).
	StoreLockWait time.Duration
}

// daemon is the running service's parts: the inventory (the current
// config and what was built from it, swapped on reload) and the rest.
type daemon struct {
	log *slog.Logger
	// isolation is what local runs are confined with (/api/v1/status).
	isolation sandbox.Isolation
	inv       *inventory.Watcher
	store     store.DaemonStore
	outbox    *outbox.Dispatcher
	metrics   *metrics.Metrics
	reg       *prometheus.Registry
	runs      *run.Manager
	rem       *remediation.Controller
	accepts   *acceptance.Service
	groups    *fleet.Service
	silences  *silence.Service
	leader    *leader.State
	// electing: leader election is on (lead takes the store lock).
	electing bool
	// kube is the kubernetes runner mode (nil: local).
	kube *kube.Mode
}

// RunDaemon runs the daemon until ctx is done (SIGTERM/SIGINT in main),
// then stops scheduling, interrupts running Terraform, waits for it and
// returns nil. With Once it returns the audit exit code of one pass.
func RunDaemon(ctx context.Context, o DaemonOptions) (exitCode int, err error) {
	if o.Logger == nil {
		return report.ExitError, errors.New("driftwatch/app: DaemonOptions.Logger is required")
	}
	cfg, err := inventory.Load(o.ConfigPath)
	if err != nil {
		return report.ExitError, fmt.Errorf("invalid config:\n%w", err)
	}
	kubeMode := cfg.Runner.Mode == config.RunnerModeKubernetes
	if kubeMode && o.Once {
		return report.ExitError, errors.New("daemon --once runs locally: it needs runner.mode local (or use `driftwatch audit`)")
	}
	if o.Once {
		// A long-running daemon discovers in its inventory's loop; one
		// pass needs its git roots before it starts.
		if err := inventory.DiscoverOnce(ctx, cfg); err != nil {
			return report.ExitError, err
		}
	}
	electing := kubeMode && cfg.Runner.LeaderElection.Enabled
	unlock, err := leader.ClaimAtStart(ctx, o.Logger, cfg, electing, o.StoreLockWait)
	if err != nil {
		return report.ExitError, err
	}
	defer unlock()
	st, err := sqlite.OpenConfigured(ctx, cfg.Store.Driver, cfg.Store.Path, cfg.Store.DSNFile, o.Logger)
	if err != nil {
		return report.ExitError, err
	}
	defer st.Close()
	d, err := newDaemon(ctx, o, cfg, st, nil)
	if err != nil {
		return report.ExitError, err
	}
	d.electing = electing
	if o.Once {
		return d.once(ctx)
	}
	srv, err := d.server(cfg)
	if err != nil {
		return report.ExitError, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx, cfg.Server.Listen) })
	if d.kube != nil {
		g.Go(func() error { return d.kube.ServeCallback(gctx) })
	}
	g.Go(func() error { d.inv.Run(gctx); return nil })
	g.Go(func() error { d.runs.Retain(gctx, d.inv.Retention); return nil })
	// Only the leader schedules and runs: the Lease's holder with leader
	// election, else the holder of the store's leadership lock.
	if le := cfg.Runner.LeaderElection; electing {
		g.Go(func() error { return d.leader.Campaign(gctx, d.kube.Client, le, cfg.Runner.LeaseNamespace(), d.lead) })
	} else {
		g.Go(func() error { return leader.HoldLock(gctx, st, sqlite.ErrLeadershipLost, d.lead) })
	}
	o.Logger.Info("driftwatch daemon started", "workspaces", len(cfg.Workspaces), "listen", cfg.Server.Listen,
		"store", cfg.Store.Where(), "max_concurrent_runs", cfg.MaxConcurrentRuns, "runner", cfg.Runner.EffectiveMode())
	if err := g.Wait(); err != nil {
		return report.ExitError, err
	}
	d.accepts.Wait()
	o.Logger.Info("driftwatch daemon stopped")
	return 0, nil
}

// newDaemon builds the daemon's parts from cfg (loaded from
// o.ConfigPath) on the open store st: the sandbox mode, the inventory
// (run targets and alert plans), the runner (local, or Kubernetes Jobs),
// metrics, the remediation controller, the notifiers and the outbox, the
// run lifecycle with its scheduler, and the silences. A non-nil
// detect replaces the runner of detection runs (tests).
func newDaemon(ctx context.Context, o DaemonOptions, cfg *config.Config, st store.DaemonStore, detect runner.Runner) (*daemon, error) {
	log := o.Logger
	d := &daemon{log: log, store: st, leader: leader.New(log)}
	var err error
	var applier remediation.Applier = remediation.InProcess{}
	if cfg.Runner.Mode == config.RunnerModeKubernetes {
		if d.kube, err = newKubeMode(cfg, log, d.mayApply); err != nil {
			return nil, err
		}
		d.isolation, applier = kube.Isolation(), d.kube.Runner
		if detect == nil {
			detect = d.kube.Runner
		}
	} else {
		if d.isolation, err = sandbox.Resolve(cfg.Terraform.Sandbox, cfg.Terraform.SandboxNetwork, log); err != nil {
			return nil, err
		}
		if err := cfg.CheckJailReach(d.isolation.Network == "isolated", d.isolation.NetworkReason); err != nil {
			return nil, err
		}
		if detect == nil {
			// The daemon re-checks the same workspaces: it keeps their
			// initialised working directories between runs.
			lr := local.New(log)
			lr.KeepWorkDirs = true
			detect = lr
		}
	}
	auditor := &pipeline.Auditor{Runner: detect, Logger: log}
	holds := &silence.Book{}
	d.inv, err = inventory.New(cfg, inventory.Options{Path: o.ConfigPath, Every: o.ReloadInterval,
		Owner: leader.StoreOwner(cfg.Store.Path), Holds: holds, Logger: log})
	if err != nil {
		return nil, err
	}
	d.reg = metrics.NewRegistry()
	d.metrics = metrics.New(d.reg, func() []metrics.WorkspaceSnapshot { return d.runs.Snapshots(d.inv.Snapshot().Names()) })
	if h, ok := st.(interface{ WriteHealth() sqlite.WriteHealth }); ok {
		metrics.RegisterStoreHealth(d.reg, func() (uint64, bool) { w := h.WriteHealth(); return w.Errors, w.Failing })
	}
	// The controller reaches the runs through remediationHost, at call
	// time: d.runs is set before anything runs. Approved remediations
	// apply in a Job with the kubernetes runner, else in this process.
	d.rem, err = remediation.New(ctx, remediation.Options{Host: remediationHost{d}, Store: st, Applier: applier,
		Metrics: metrics.NewRemediations(d.reg), Logger: log, Runner: cfg.Runner.EffectiveMode(),
		HashMismatchErr: server.ErrHashMismatch, Caller: server.CallerActor})
	if err != nil {
		return nil, err
	}
	ns, err := notifiers.Build(cfg.NotifierSpecs(), log)
	if err != nil {
		return nil, err
	}
	// PostgreSQL replicas: the outbox sends only while this one leads.
	d.outbox, err = outbox.New(outbox.Options{
		Store: st, Notifiers: ns, Logger: log,
		OnResult: d.metrics.NotificationResult, OnPending: d.metrics.SetNotificationsPending,
	})
	if err != nil {
		return nil, err
	}
	d.groups = fleet.New(fleet.Options{Store: st, Inventory: d.inv.Alerting, Wake: d.outbox.Wake, Logger: log,
		States: func(ws string) (store.WorkspaceState, bool) { return d.runs.State(ws) }})
	d.runs, err = run.New(ctx, run.Options{
		Store: st, Logger: log, Auditor: auditor, Metrics: d.metrics,
		Schedule: schedule.Options{MaxConcurrent: cfg.MaxConcurrentRuns, Jitter: time.Duration(cfg.Defaults.Jitter), Clock: schedule.DaemonClock(),
			AllowSubMinute: cfg.AllowSubMinuteSchedules},
		Inventory: d.inv, Incidents: d.groups, Recorded: d.groups.Recorded, Leader: d.leader, Remediation: d.rem,
	})
	if err != nil {
		return nil, err
	}
	if err := d.runs.SetJobs(d.inv.Snapshot().Jobs()); err != nil {
		return nil, err
	}
	// Acceptances run Terraform in this process, jailed as local runs.
	d.accepts, err = acceptance.New(ctx, acceptance.Options{Store: st, Config: d.inv.Config, Logger: log, Unavailable: d.kube.NoAccept(),
		Target: func(ws string) (terraform.Request, bool) { t, ok := d.inv.Target(ws); return t.Request, ok }})
	if err != nil {
		return nil, err
	}
	d.silences, err = silence.New(ctx, silence.Options{Store: st, Book: holds, Inventory: d.inv, Leader: d.leader, Outbox: d.outbox, Logger: log})
	if err != nil {
		return nil, err
	}
	d.inv.Connect(inventory.Parts{Runs: d.runs, Store: st, Leader: d.leader, Outbox: d.outbox,
		Notifiers: notifiers.Reload{Set: d.outbox.SetNotifiers, Logger: log}, Followers: []inventory.Follower{d.rem}})
	return d, nil
}

// newKubeMode builds the kubernetes runner mode (kube.NewMode) from
// runner.kubernetes; proceed answers remediation pods' proceed checks
// (daemon.mayApply).
func newKubeMode(cfg *config.Config, log *slog.Logger, proceed remote.ProceedFunc) (*kube.Mode, error) {
	k := cfg.Runner.Kubernetes
	if k == nil {
		return nil, errors.New("kubernetes runner: runner.kubernetes is required")
	}
	return kube.NewMode(kube.ModeOptions{Kubeconfig: k.Kubeconfig, QPS: k.APIQPS, Burst: k.APIBurst, CallbackListen: k.CallbackListen, Config: kube.Config(k.Kube()),
		TLSCertFile: cfg.Server.TLSCertFile, TLSKeyFile: cfg.Server.TLSKeyFile, Proceed: proceed, Logger: log})
}

// server is the HTTP server: status page, API (through control) and
// metrics. The run pods' result routes are not among them: in kubernetes
// mode they have a listener of their own (kube.Mode.ServeCallback).
func (d *daemon) server(cfg *config.Config) (*server.Server, error) {
	// Slack's interactivity requests (the Approve / Reject buttons) carry
	// no bearer token: the handler authenticates them by their signature,
	// with the current config's notifiers; its audit entries share the
	// server's limits.
	audit := server.AuditFor(d.store, server.AuditLimits{Logger: d.log, Registerer: d.reg})
	slackHandler, err := slackinteract.NewAudited(slackinteract.Options{Decider: d.rem, WithActor: remediation.WithActor,
		HashMismatchErr: server.ErrHashMismatch, Logger: d.log, Replay: store.ReplayOf(d.store)},
		func() []notifycfg.Spec { return d.inv.Config().NotifierSpecs() }, audit, server.AuditPeer)
	if err != nil {
		return nil, err
	}
	return server.New(server.Options{
		// The store is what the pages and the API read.
		Store: d.store, Logs: d.store, Incidents: d.store, Groups: d.store,
		Audit: audit, Control: d.control(), Gatherer: d.reg, Logger: d.log, Version: version.Version,
		Handlers: map[string]http.Handler{slackinteract.Route: slackHandler},
		Config:   cfg.Server, CallbackURL: cfg.Runner.CallbackURL(),
		Sandbox: server.SandboxStatus{Mode: d.isolation.Mode, Reason: d.isolation.Reason,
			Network: d.isolation.Network, NetworkReason: d.isolation.NetworkReason},
		Leader: d.leader.Leader,
	})
}

// control is the daemon as the server sees it (server.DaemonControl).
func (d *daemon) control() server.DaemonControl {
	return server.DaemonControl{Config: d.inv.Config, Runs: d.runs, Leader: d.leader, Outbox: d.store,
		RemediationControl: d.rem, SilenceControl: d.silences.Control(), AcceptControl: d.accepts, AdoptControl: d.accepts}
}

// lead is the run lifecycle's Lead (run.Manager.Lead) with the daemon's
// parts: the store lock when electing, the Jobs in kubernetes mode, the
// silences and the remediation loop.
func (d *daemon) lead(ctx context.Context) error {
	l := run.Lead{Prepare: d.silences.Load, SetLeading: d.leader.SetLeading,
		// The outbox delivers only while leading: replicas on one
		// PostgreSQL store would otherwise each send the same message.
		Loops:      []func(context.Context) error{func(ctx context.Context) error { d.silences.Run(ctx); return nil }, d.rem.Run, d.outbox.Run, d.groups.Run},
		Workspaces: func() []string { return d.inv.Snapshot().Names() }}
	if d.kube != nil {
		l.Jobs = d.kube.Runner.Jobs(d.rem)
	}
	l.Claim = leader.ClaimWhenLeading(d.log, d.electing, d.inv.Config)
	return d.runs.Lead(ctx, l)
}

// once is one pass (run.Manager.Pass) and its audit exit code.
func (d *daemon) once(ctx context.Context) (int, error) {
	start := time.Now()
	results, err := d.runs.Pass(ctx, d.inv.Snapshot().Names(), d.groups.Deciding(d.outbox))
	if err != nil {
		return report.ExitError, err
	}
	return report.New(start, time.Now(), results).ExitCode(false), nil
}
