package remediation

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// TriggerRemediate is the scheduler trigger (and run trigger) of an apply:
// going through the scheduler gives it the workspace's slot, so no other
// run of the workspace is in flight while it applies. Host.QueueApply
// queues it; the run lifecycle (internal/run) calls Apply for it. It is
// run.TriggerRemediate (a test checks), written here so that the
// controller does not import the run lifecycle that calls it.
const TriggerRemediate = "remediate"

// triggerVerify is the detection run asked for (Host.Detect) right after
// an apply.
const triggerVerify = "verify"

// Host is what the controller needs of the daemon it runs in, read at
// each use (a reload swaps the config, targets and alert plans).
type Host interface {
	// Config is the current (reloaded) config.
	Config() *config.Config
	// Target is a configured workspace's target (false: not configured).
	Target(workspace string) (Target, bool)
	// Leading reports whether this daemon schedules (it holds the Lease,
	// or leader election is off). A standby writes nothing.
	Leading() bool
	// QueueApply queues a TriggerRemediate run in the workspace's
	// scheduler slot: nil, schedule.ErrBusy (already queued or running)
	// or schedule.ErrUnknownJob (not configured).
	QueueApply(workspace string) error
	// Detect runs one detection of the workspace outside the queue, in
	// the calling apply's slot, recorded with trigger.
	Detect(ctx context.Context, workspace, trigger string)
	// AlertPlan is how the workspace's incidents are decided and routed
	// (false: not configured).
	AlertPlan(workspace string) (AlertPlan, bool)
	// WakeOutbox tells the outbox that messages were enqueued.
	WakeOutbox()
}

// Target is what an apply needs of a configured workspace's detection
// target (pipeline.Target): its run request and classification rules.
type Target struct {
	Request terraform.Request
	Rules   policy.Rules
}

// AlertPlan is a workspace's incident policy and notifier targets: where
// a remediation is announced.
type AlertPlan = incident.Plan

// Store is every store method the controller uses: remediations and the
// pause flag, and its apply runs (an adopted Job's is finished under its
// id).
type Store interface {
	store.RemediationStore
	StartRun(ctx context.Context, r store.Run) error
	Run(ctx context.Context, id string) (store.Run, error)
}

// Applier performs an approved remediation where the workspace's runs
// execute: in the daemon's process (InProcess, runner.mode local) or in a
// Kubernetes Job (the kubernetes runner, wired by app), with a's rules,
// envelope and lock timeout either way. An error matching ErrLeftRunning
// means this daemon stopped while the Job applies: nothing is recorded,
// the next daemon awaits the Job (RecordAdopted).
type Applier interface {
	Remediate(ctx context.Context, a *engine.Applier, req terraform.Request, approved engine.ChangeSet) (engine.Outcome, error)
}

// ErrLeftRunning is in an Applier's error when this daemon stopped while
// the apply goes on without it (a Kubernetes Job keeps applying; the
// kubernetes runner's Remediate wraps it): engine.ErrLeftRunning.
var ErrLeftRunning = engine.ErrLeftRunning

// InProcess applies in the daemon's process, with a.Apply.
type InProcess struct{}

// Remediate implements Applier.
func (InProcess) Remediate(ctx context.Context, a *engine.Applier, req terraform.Request, approved engine.ChangeSet) (engine.Outcome, error) {
	return a.Apply(ctx, req, approved)
}

// Options configures a Controller. Every field but Caller is required.
type Options struct {
	Host    Host
	Store   Store
	Applier Applier
	Metrics *metrics.Remediations
	Logger  *slog.Logger
	// Runner is the runner mode (local or kubernetes), for the logs.
	Runner string
	// HashMismatchErr is what Approve returns when the approver was shown
	// another change set than the one stored (server.ErrHashMismatch: the
	// API answers it 409).
	HashMismatchErr error
	// Caller, if set, names who decides through a context (the identity
	// the server authenticated: server.CallerActor), "" when it cannot;
	// it takes precedence over WithActor's (optional).
	Caller func(context.Context) string
}

// Controller wires internal/remediation/engine into the daemon: it records what
// detection runs propose, owns approval, expiry and the kill switch, and
// applies approved change sets in the workspace's scheduler slot.
type Controller struct {
	host         Host
	store        Store
	log          *slog.Logger
	metrics      *metrics.Remediations
	runner       string
	hashMismatch error
	caller       func(context.Context) string
	// applier is Options.Applier (a test replaces it).
	applier Applier
	paused  atomic.Bool // persisted pause flag (POST /api/v1/remediation/pause)
	kick    chan struct{}
	// decide serialises a decision that reads the workspace's remediation
	// mode and then moves a remediation on (approve, propose, start an
	// apply) with a config reload ending the remediations of workspaces
	// turned off (Reloaded): the decision sees the new config, or the
	// reload sees what the decision wrote.
	decide sync.Mutex
	// reconciled is the config whose turned-off remediations Reloaded
	// ended (or the first the loop saw): the loop finding a newer one
	// runs before a reload's Reloaded and words what it ends as the
	// reload's doing, as Reloaded would.
	reconciled atomic.Pointer[config.Config]
}

// New reads the persisted pause flag and marks the remediations a
// previous process left running failed (a restart during an apply).
func New(ctx context.Context, o Options) (*Controller, error) {
	switch {
	case o.Host == nil:
		return nil, errors.New("driftwatch/remediation: Options.Host is required")
	case o.Store == nil:
		return nil, errors.New("driftwatch/remediation: Options.Store is required")
	case o.Applier == nil:
		return nil, errors.New("driftwatch/remediation: Options.Applier is required")
	case o.Metrics == nil:
		return nil, errors.New("driftwatch/remediation: Options.Metrics is required")
	case o.Logger == nil:
		return nil, errors.New("driftwatch/remediation: Options.Logger is required")
	case o.HashMismatchErr == nil:
		return nil, errors.New("driftwatch/remediation: Options.HashMismatchErr is required")
	}
	c := &Controller{
		host: o.Host, store: o.Store, applier: o.Applier, metrics: o.Metrics, runner: o.Runner, hashMismatch: o.HashMismatchErr, caller: o.Caller,
		log: o.Logger.With("component", "remediation"), kick: make(chan struct{}, 1),
	}
	p, err := c.store.RemediationPaused(ctx)
	if err != nil {
		return nil, err
	}
	c.paused.Store(p)
	interrupted, err := c.store.InterruptRemediations(ctx, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	for _, r := range interrupted {
		c.log.Warn("remediation interrupted by a restart: marked failed", "workspace", r.Workspace, "remediation", r.ID)
		c.metrics.Finished(string(store.RemediationFailed))
	}
	return c, nil
}

// stopped reports whether the kill switch is on (config or API).
func (c *Controller) stopped() bool {
	return !c.host.Config().Remediation.On() || c.paused.Load()
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Controller) workspace(name string) (config.Workspace, bool) {
	cfg := c.host.Config()
	for _, w := range cfg.Workspaces {
		if w.Name == name {
			return w, true
		}
	}
	return config.Workspace{}, false
}

func (c *Controller) policy(name string) (config.RemediationPolicy, bool) {
	w, ok := c.workspace(name)
	if !ok {
		return config.RemediationPolicy{}, false
	}
	return c.host.Config().EffectiveRemediation(w), true
}
