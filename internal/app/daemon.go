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
	"github.com/driftwatch/driftwatch/internal/inventory"
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
	"github.com/driftwatch/driftwatch/internal/runner/kube"
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

// daemon is the running service's parts: the inventory (the current
// config and what was built from it, swapped on reload), the store, the
// run lifecycle, the remediation controller, the silences, the outbox,
// metrics and who leads.
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
	silences  *silence.Service
	leader    *leader.State
	// electing is set when leader election is on: lead takes the store
	// lock.
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
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = 5 * time.Second
	}
	if o.StoreLockWait <= 0 {
		o.StoreLockWait = leader.StoreLockWait
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
		if err := inventory.DiscoverGit(ctx, cfg, inventory.DiscoverTimeout); err != nil {
			return report.ExitError, fmt.Errorf("discovery: %w", err)
		}
	}
	// One scheduling daemon per store. With leader election a standby may
	// share the store (it serves the status page and read API from it):
	// the lock is then taken when leading (see lead).
	// A PostgreSQL store is shared by replicas: no file lock (docs/architecture/store.md).
	electing := kubeMode && cfg.Runner.LeaderElection.Enabled
	if !electing && cfg.Store.Driver != config.StorePostgres {
		unlock, err := leader.ClaimStore(ctx, o.Logger, cfg.Store.Path, cfg.Terraform.WorkDir, o.StoreLockWait)
		if err != nil {
			return report.ExitError, err
		}
		defer unlock()
	}
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
	if le := cfg.Runner.LeaderElection; electing {
		// Only the Lease holder schedules and runs; losing the Lease ends
		// the process (after stopping scheduling) so that it campaigns
		// again from a clean state.
		g.Go(func() error { return d.leader.Campaign(gctx, d.kube.Client, le, cfg.Runner.LeaseNamespace(), d.lead) })
	} else {
		// On PostgreSQL replicas wait for the database's leadership lock
		// (SQLite: at once); losing it ends the process, as losing the Lease does.
		g.Go(func() error {
			leading, release, err := st.Lead(gctx)
			if err != nil {
				return err
			}
			defer release()
			if err := d.lead(leading); err != nil {
				return err
			}
			if cause := context.Cause(leading); errors.Is(cause, sqlite.ErrLeadershipLost) {
				return cause
			}
			return nil
		})
	}
	o.Logger.Info("driftwatch daemon started", "workspaces", len(cfg.Workspaces), "listen", cfg.Server.Listen,
		"store", cfg.Store.Where(), "max_concurrent_runs", cfg.MaxConcurrentRuns, "runner", d.runnerMode())
	if err := g.Wait(); err != nil {
		return report.ExitError, err
	}
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
	d.isolation = sandbox.Isolation{Mode: "none", Reason: "runs are Kubernetes Jobs: the pod is their sandbox",
		Network: "host", NetworkReason: "runs are Kubernetes Jobs: the chart's NetworkPolicy confines them"}
	// The daemon re-checks the same workspaces: it keeps their initialised
	// working directories between runs.
	lr := local.New(log)
	lr.KeepWorkDirs = true
	auditor := &pipeline.Auditor{Runner: lr, Logger: log}
	var err error
	if cfg.Runner.Mode == config.RunnerModeKubernetes {
		if d.kube, err = newKubeMode(cfg, log, d.mayApply); err != nil {
			return nil, err
		}
		auditor = &pipeline.Auditor{Runner: d.kube.Runner, Logger: log}
	} else {
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
	// time: d.runs is set before anything runs.
	if d.rem, err = newRemediator(ctx, d, metrics.NewRemediations(d.reg)); err != nil {
		return nil, err
	}
	ns, err := notifiers.Build(cfg.NotifierSpecs(), log)
	if err != nil {
		return nil, err
	}
	// PostgreSQL replicas: the outbox sends only while this one leads.
	var fence func(context.Context) error
	if l, ok := st.(interface{ LeadHeld(context.Context) error }); ok {
		fence = l.LeadHeld
	}
	d.outbox, err = outbox.New(outbox.Options{
		Store: st, Notifiers: ns, Logger: log, Fence: fence,
		OnResult: d.metrics.NotificationResult, OnPending: d.metrics.SetNotificationsPending,
	})
	if err != nil {
		return nil, err
	}
	d.runs, err = run.New(ctx, run.Options{
		Store: st, Logger: log, Auditor: auditor, Metrics: d.metrics,
		Schedule: schedule.Options{MaxConcurrent: cfg.MaxConcurrentRuns, Jitter: time.Duration(cfg.Defaults.Jitter), Clock: schedule.DaemonClock(),
			AllowSubMinute: cfg.AllowSubMinuteSchedules},
		Inventory: d.inv, Incidents: d.inv, Recorded: d.outbox.Wake, Leader: d.leader, Remediation: d.rem,
	})
	if err != nil {
		return nil, err
	}
	if err := d.runs.SetJobs(d.inv.Snapshot().Jobs()); err != nil {
		return nil, err
	}
	d.silences, err = silence.New(ctx, silence.Options{Store: st, Book: holds, Inventory: d.inv, Leader: d.leader, Outbox: d.outbox, Logger: log})
	if err != nil {
		return nil, err
	}
	d.inv.Connect(inventory.Parts{Runs: d.runs, Store: st, Leader: d.leader, Outbox: d.outbox,
		Notifiers: notifierSet{d}, Followers: []inventory.Follower{d.rem}})
	return d, nil
}

// notifierSet builds a reloaded config's notifiers for the outbox
// (inventory.Notifiers).
type notifierSet struct{ d *daemon }

func (n notifierSet) SetNotifiers(cfg *config.Config) error {
	ns, err := notifiers.Build(cfg.NotifierSpecs(), n.d.log)
	if err == nil {
		n.d.outbox.SetNotifiers(ns)
	}
	return err
}

// server is the HTTP server: status page, API (through control) and
// metrics. The run pods' result routes are not among them: in kubernetes
// mode they have a listener of their own (kube.Mode.ServeCallback).
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
	audit := server.AuditFor(d.store, server.AuditLimits{Logger: d.log, Registerer: d.reg})
	slackHandler, err := slackinteract.New(slackinteract.Options{
		Notifiers: func() ([]slackinteract.Notifier, error) {
			return slackinteract.FromSpecs(d.inv.Config().NotifierSpecs())
		},
		Decider:         d.rem,
		WithActor:       remediation.WithActor,
		HashMismatchErr: server.ErrHashMismatch,
		Logger:          d.log,
		OnDecision:      slackinteract.DecisionAudit(audit, d.log),
		OnRefused:       slackinteract.RefusalAudit(audit, server.AuditPeer, d.log),
		Replay:          store.ReplayOf(d.store),
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
		Control:     d.control(),
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

// control is the daemon as the server sees it (server.DaemonControl).
func (d *daemon) control() server.DaemonControl {
	return server.DaemonControl{Config: d.inv.Config, Runs: d.runs, Leader: d.leader, Outbox: d.store,
		RemediationControl: d.rem, SilenceControl: d.silences.Control()}
}

func (d *daemon) runnerMode() string {
	if d.kube != nil {
		return config.RunnerModeKubernetes
	}
	return config.RunnerModeLocal
}

// lead is the run lifecycle's Lead (run.Manager.Lead) with the daemon's
// parts: the store lock when electing, the Jobs in kubernetes mode, the
// silences and the remediation loop.
func (d *daemon) lead(ctx context.Context) error {
	l := run.Lead{Prepare: d.silences.Load, SetLeading: d.leader.SetLeading,
		// The outbox delivers only while leading: replicas on one
		// PostgreSQL store would otherwise each send the same message.
		Loops:      []func(context.Context) error{func(ctx context.Context) error { d.silences.Run(ctx); return nil }, d.rem.Run, d.outbox.Run},
		Workspaces: func() []string { return d.inv.Snapshot().Names() }}
	if d.kube != nil {
		l.Jobs = kubeJobs{d.kube.Runner, d.rem}
	}
	if d.electing && d.inv.Config().Store.Driver != config.StorePostgres {
		// A standby sharing the store waited here for the leader's lock
		// (on PostgreSQL the replicas share the database: no file lock).
		l.Claim = func(ctx context.Context) (func(), error) {
			cfg := d.inv.Config()
			d.log.Info("leading: taking the store lock", "store", cfg.Store.Path)
			return leader.ClaimStore(ctx, d.log, cfg.Store.Path, cfg.Terraform.WorkDir, 0)
		}
	}
	return d.runs.Lead(ctx, l)
}

// once is one pass (run.Manager.Pass) and its audit exit code.
func (d *daemon) once(ctx context.Context) (int, error) {
	start := time.Now()
	results, err := d.runs.Pass(ctx, d.inv.Snapshot().Names(), d.outbox)
	if err != nil {
		return report.ExitError, err
	}
	return report.New(start, time.Now(), results).ExitCode(false), nil
}
