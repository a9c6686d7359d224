package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/audit"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/outbox"
	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// offFixture is a leading daemon's remediation side on a real store and
// a real config file, reloaded with daemon.reload, with an open drift
// incident on workspaces net and db (routed to the webhook "hook", whose
// messages stay in the outbox).
type offFixture struct {
	d    *daemon
	dir  string
	path string
}

// writeConfig writes the config file with the remediation block of net
// and of db ("" for none: off by default), and, if more, extra workspace
// entries.
func (f *offFixture) writeConfig(t *testing.T, net, db string, more ...string) {
	t.Helper()
	ws := func(name, rem string) string {
		s := fmt.Sprintf("  - name: %s\n    source: { path: ./%s }\n", name, name)
		if rem != "" {
			s += "    remediation: " + rem + "\n"
		}
		return s
	}
	body := fmt.Sprintf(`store: { path: %q }
notifiers:
  - name: hook
    type: webhook
    webhook: { url_file: hook-url, secret_file: hook-secret }
alerts: { default_notifiers: [hook] }
workspaces:
`, filepath.Join(f.dir, "dw.db")) + ws("net", net) + ws("db", db)
	for _, m := range more {
		body += ws(m, "{ mode: approve }")
	}
	require.NoError(t, os.WriteFile(f.path, []byte(body), 0o644))
}

func newOffFixture(t *testing.T, net, db string) *offFixture {
	t.Helper()
	dir := t.TempDir()
	f := &offFixture{dir: dir, path: filepath.Join(dir, "driftwatch.yaml")}
	for _, n := range []string{"net", "db", "web"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, n), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-url"), []byte("http://127.0.0.1:9/hook\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook-secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	f.writeConfig(t, net, db)
	cfg, err := config.LoadFile(f.path)
	require.NoError(t, err)

	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), cfg.Store.Path, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	// Every workspace was checked before (no initial run is queued).
	states := map[string]store.WorkspaceState{}
	for _, n := range []string{"net", "db", "web"} {
		states[n] = store.WorkspaceState{Workspace: n}
	}
	d := &daemon{log: logger, owner: "test", store: st, states: states, adopted: map[string]bool{}, runs: runlog.NewRegistry()}
	// The verification detection after an apply errors: no Terraform here.
	d.auditor = &audit.Auditor{Runner: erroredRunner{}, Logger: logger}
	d.cfg.Store(cfg)
	targets, err := targetMap(cfg, d.owner)
	require.NoError(t, err)
	d.targets.Store(&targets)
	plans := alertPlans(cfg)
	d.alerts.Store(&plans)
	reg := prometheus.NewRegistry()
	d.metrics = metrics.New(reg, d.snapshot)
	// No notifier delivers: the messages stay in the outbox for drain.
	d.outbox, err = outbox.New(outbox.Options{Store: st, Logger: logger})
	require.NoError(t, err)
	d.sched, err = schedule.New(d.schedOptions(cfg))
	require.NoError(t, err)
	require.NoError(t, d.sched.SetJobs(jobs(cfg)))
	d.leading.Store(true) // as lead does once it schedules
	d.rem = &remediator{d: d, log: logger, metrics: metrics.NewRemediations(reg), kick: make(chan struct{}, 1)}
	f.d = d
	for _, ws := range []string{"net", "db"} {
		f.openDrift(t, ws)
	}
	require.Equal(t, []string{"open", "open"}, f.drain(t))
	return f
}

// openDrift records a drifted detection run of ws: its drift incident
// opens (confirm_after 1).
func (f *offFixture) openDrift(t *testing.T, ws string) {
	t.Helper()
	now := time.Now().UTC()
	run := store.Run{ID: newRunID(), Workspace: ws, Trigger: "schedule", StartedAt: now, Status: store.RunRunning}
	require.NoError(t, f.d.store.StartRun(t.Context(), run))
	run.FinishedAt, run.Status = now, drift.StatusDrift
	run.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: "dwtest_file.a", Type: "dwtest_file", Action: "update", Attributes: []string{"content"}}}
	plan := (*f.d.alerts.Load())[ws]
	_, _, err := f.d.store.FinishRunWithOutcome(t.Context(), run, plan.outcome(now, run.ID))
	require.NoError(t, err)
}

// propose stores a remediation of ws in state (pending or approved) with
// its announcement, as afterDetect does.
func (f *offFixture) propose(t *testing.T, ws string, state store.RemediationState) store.Remediation {
	t.Helper()
	now := time.Now().UTC()
	cs := remediate.ChangeSet{Entries: []remediate.Entry{{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}}}}
	csJSON, err := json.Marshal(cs)
	require.NoError(t, err)
	r := store.Remediation{ID: newRunID(), Workspace: ws, DetectRunID: "detect-" + ws, Mode: config.RemediationApprove,
		ChangeSet: csJSON, ChangeSetHash: cs.Hash(), Refusals: json.RawMessage(`[]`), CreatedAt: now, State: state}
	switch state {
	case store.RemediationPending:
		r.ExpiresAt = now.Add(time.Hour)
	case store.RemediationApproved:
		r.Mode, r.DecidedAt, r.DecidedBy = config.RemediationAuto, now, "auto"
	}
	require.NoError(t, f.d.rem.createAnnounced(t.Context(), r))
	return r
}

// reload rewrites the config and reloads it as the daemon does.
func (f *offFixture) reload(t *testing.T, net, db string, more ...string) {
	t.Helper()
	f.writeConfig(t, net, db, more...)
	f.d.reload(f.path)
}

func (f *offFixture) get(t *testing.T, id string) store.Remediation {
	t.Helper()
	r, err := f.d.store.Remediation(t.Context(), id)
	require.NoError(t, err)
	return r
}

// drain returns the outbox's messages in order ("open",
// "remediation:refused", ...) and marks them delivered.
func (f *offFixture) drain(t *testing.T) []string {
	t.Helper()
	var events []string
	for {
		ms, err := f.d.store.DueMessages(t.Context(), time.Now().Add(time.Hour), 100)
		require.NoError(t, err)
		if len(ms) == 0 {
			return events
		}
		for _, m := range ms {
			var msg notify.Message
			require.NoError(t, json.Unmarshal(m.Payload, &msg))
			e := string(msg.Event)
			if msg.Remediation != nil {
				e += ":" + string(msg.Remediation.Result) + ":" + msg.Remediation.Reason
			}
			events = append(events, e)
			require.NoError(t, f.d.store.MarkDelivered(t.Context(), m.ID, time.Now(), nil))
		}
	}
}

// erroredRunner stands in for Terraform in detection runs: every run errors.
type erroredRunner struct{}

func (erroredRunner) Run(context.Context, runner.Request) (runner.Result, error) {
	return runner.Result{}, &runner.Error{Phase: "plan", Reason: "no terraform in this test"}
}

// fakeApplier stands in for Terraform in remediator.apply: it plans (runs
// duringPlan), then, like remediate.Applier.Apply, asks the kill switch
// and Proceed right before `terraform apply`, which it only records.
type fakeApplier struct {
	duringPlan func()
	applied    []string // run ids that reached `terraform apply`
}

func (f *fakeApplier) Remediate(ctx context.Context, a *remediate.Applier, req runner.Request, approved remediate.ChangeSet) (remediate.Outcome, error) {
	if f.duringPlan != nil {
		f.duringPlan()
	}
	refuse := func(r remediate.Refusal) (remediate.Outcome, error) {
		return remediate.Outcome{Result: remediate.ResultRefused, Reason: r.Reason, Refusals: []remediate.Refusal{r}}, nil
	}
	if a.Paused != nil && a.Paused() {
		return refuse(remediate.Refusal{Code: remediate.CodePaused, Reason: "remediation is paused (global kill switch)"})
	}
	if a.Proceed != nil {
		if r := a.Proceed(ctx); r != nil {
			return refuse(*r)
		}
	}
	f.applied = append(f.applied, req.RunID)
	return remediate.Outcome{Result: remediate.ResultApplied, ApplyStarted: true}, nil
}

const (
	approveMode = "{ mode: approve }"
	autoMode    = "{ mode: auto }"
	offMode     = "{ mode: off }"
)

// TestReloadTurnsRemediationOff: a reload that turns a workspace's
// remediation off (or removes the workspace) ends its pending proposal
// (expired) and its approved, not yet started remediation (refused,
// announced on the incident), with the reason; approving is refused with
// a conflict naming it; nothing applies. Other workspaces, and other
// changes (approve to auto), are left alone.
func TestReloadTurnsRemediationOff(t *testing.T) {
	const reason = "remediation turned off by config reload"
	t.Run("pending proposal, then approve", func(t *testing.T) {
		f := newOffFixture(t, approveMode, approveMode)
		net := f.propose(t, "net", store.RemediationPending)
		db := f.propose(t, "db", store.RemediationPending)
		require.Equal(t, []string{"remediation:awaiting_approval:", "remediation:awaiting_approval:"}, f.drain(t))

		f.reload(t, offMode, approveMode)
		got := f.get(t, net.ID)
		require.Equal(t, store.RemediationExpired, got.State)
		require.Equal(t, reason, got.Reason)
		require.Equal(t, "config", got.DecidedBy)
		require.Equal(t, store.RemediationPending, f.get(t, db.ID).State, "db's remediation is still on")
		require.Empty(t, f.drain(t), "an expiry is not announced")

		_, err := remediationControl{f.d.rem}.Approve(t.Context(), net.ID, net.ChangeSetHash)
		require.ErrorIs(t, err, store.ErrConflict) // 409
		require.EqualError(t, err, fmt.Sprintf("remediation %q: conflict: remediation for workspace net is off (config)", net.ID))
		require.Equal(t, reason, f.get(t, net.ID).Reason, "the reload's reason stays")

		// Nothing of net is queued or applied.
		fa := &fakeApplier{}
		f.d.rem.applyWith = fa
		f.d.rem.apply(t.Context(), "net")
		require.Empty(t, fa.applied)
		require.Equal(t, store.RemediationExpired, f.get(t, net.ID).State)

		// db still approves and applies.
		_, err = remediationControl{f.d.rem}.Approve(t.Context(), db.ID, db.ChangeSetHash)
		require.NoError(t, err)
		f.d.rem.apply(t.Context(), "db")
		require.Len(t, fa.applied, 1)
		require.Equal(t, store.RemediationApplied, f.get(t, db.ID).State)
	})

	t.Run("approved, not started", func(t *testing.T) {
		f := newOffFixture(t, autoMode, autoMode)
		net := f.propose(t, "net", store.RemediationApproved)
		require.Equal(t, []string{"remediation:approved:"}, f.drain(t))

		f.reload(t, offMode, autoMode)
		got := f.get(t, net.ID)
		require.Equal(t, store.RemediationRefused, got.State)
		require.Equal(t, reason, got.Reason)
		require.Equal(t, "auto", got.DecidedBy, "who approved it stays")
		var out remediate.Outcome
		require.NoError(t, json.Unmarshal(got.Outcome, &out))
		require.Equal(t, remediate.Outcome{Result: remediate.ResultRefused, Reason: reason,
			Refusals: []remediate.Refusal{{Code: remediate.CodeRemediationOff, Reason: reason}}}, out)
		require.True(t, refusedTransiently(got), "proposed again once remediation is back on")
		require.Equal(t, []string{"remediation:refused:" + reason}, f.drain(t), "announced like any refusal")

		// It never applies.
		fa := &fakeApplier{}
		f.d.rem.applyWith = fa
		f.d.rem.apply(t.Context(), "net")
		require.Empty(t, fa.applied)
		runs, err := f.d.store.Runs(t.Context(), "net", 10)
		require.NoError(t, err)
		for _, r := range runs {
			require.NotEqual(t, triggerRemediate, r.Trigger, "no apply run recorded")
		}
	})

	t.Run("workspace removed", func(t *testing.T) {
		f := newOffFixture(t, approveMode, approveMode)
		f.reload(t, approveMode, approveMode, "web")
		web := f.propose(t, "web", store.RemediationPending)
		f.reload(t, approveMode, approveMode)
		got := f.get(t, web.ID)
		require.Equal(t, store.RemediationExpired, got.State)
		require.Equal(t, "workspace web removed by config reload", got.Reason)
		_, err := remediationControl{f.d.rem}.Approve(t.Context(), web.ID, "")
		require.ErrorIs(t, err, store.ErrConflict)
		require.ErrorContains(t, err, "workspace web is no longer configured")
	})

	t.Run("other changes end nothing", func(t *testing.T) {
		f := newOffFixture(t, approveMode, approveMode)
		net := f.propose(t, "net", store.RemediationPending)
		db := f.propose(t, "db", store.RemediationApproved)
		f.reload(t, autoMode, `{ mode: approve, max_resources: 3, approval_ttl: 1h }`)
		require.Equal(t, store.RemediationPending, f.get(t, net.ID).State)
		require.Equal(t, store.RemediationApproved, f.get(t, db.ID).State)
	})

	t.Run("a standby writes nothing", func(t *testing.T) {
		f := newOffFixture(t, approveMode, approveMode)
		net := f.propose(t, "net", store.RemediationPending)
		f.d.leading.Store(false)
		f.reload(t, offMode, approveMode)
		require.Equal(t, store.RemediationPending, f.get(t, net.ID).State)
		// The leader's loop ends it (here: one tick's sweep), with the
		// reason of the config it finds.
		rs, err := f.d.store.Remediations(t.Context(), "", 200)
		require.NoError(t, err)
		kept := f.d.rem.endOffAll(t.Context(), rs, time.Now().UTC(), false)
		require.Empty(t, kept)
		got := f.get(t, net.ID)
		require.Equal(t, store.RemediationExpired, got.State)
		require.Equal(t, "remediation for workspace net is off (config)", got.Reason)
	})
}

// TestApproveWhileOff: with the workspace's remediation off in the current
// config, even without the reload's hook (a config changed while the
// daemon was down, a race with the reload), approving is refused (409)
// and the proposal is recorded expired with the reason; an approved
// remediation is refused when its slot comes, before anything runs.
func TestApproveWhileOff(t *testing.T) {
	f := newOffFixture(t, approveMode, approveMode)
	net := f.propose(t, "net", store.RemediationPending)
	db := f.propose(t, "db", store.RemediationApproved)
	f.drain(t)
	f.writeConfig(t, offMode, offMode)
	cfg, err := config.LoadFile(f.path)
	require.NoError(t, err)
	f.d.cfg.Store(cfg) // swapped without the reload hook

	_, err = remediationControl{f.d.rem}.Approve(t.Context(), net.ID, "")
	require.ErrorIs(t, err, store.ErrConflict)
	require.ErrorContains(t, err, "remediation for workspace net is off (config)")
	got := f.get(t, net.ID)
	require.Equal(t, store.RemediationExpired, got.State)
	require.Equal(t, "remediation for workspace net is off (config)", got.Reason)

	fa := &fakeApplier{}
	f.d.rem.applyWith = fa
	f.d.rem.apply(t.Context(), "db")
	require.Empty(t, fa.applied)
	got = f.get(t, db.ID)
	require.Equal(t, store.RemediationRefused, got.State)
	require.Empty(t, got.ApplyRunID, "no apply run started")
	require.Equal(t, "remediation for workspace db is off (config)", got.Reason)
	require.Equal(t, []string{"remediation:refused:remediation for workspace db is off (config)"}, f.drain(t))
}

// TestApproveWhileKillSwitch: the kill switch (API pause, or
// remediation.enabled: false) does not refuse an approval, as before: the
// approved remediation waits, applies nothing while the switch is on, and
// applies after resume.
func TestApproveWhileKillSwitch(t *testing.T) {
	f := newOffFixture(t, approveMode, approveMode)
	net := f.propose(t, "net", store.RemediationPending)
	f.d.rem.paused.Store(true)
	got, err := remediationControl{f.d.rem}.Approve(t.Context(), net.ID, net.ChangeSetHash)
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, got.State)

	fa := &fakeApplier{}
	f.d.rem.applyWith = fa
	f.d.rem.apply(t.Context(), "net")
	require.Empty(t, fa.applied, "held by the kill switch")
	require.Equal(t, store.RemediationApproved, f.get(t, net.ID).State)

	f.d.rem.paused.Store(false)
	f.d.rem.apply(t.Context(), "net")
	require.Len(t, fa.applied, 1)
	require.Equal(t, store.RemediationApplied, f.get(t, net.ID).State)
}

// TestApplyTurnedOffDuringPlan: a local apply that started (running)
// before a reload turned its workspace's remediation off is not ended by
// the reload, and the check right before `terraform apply` refuses it;
// the outcome is recorded (refused, remediation_off) and announced.
func TestApplyTurnedOffDuringPlan(t *testing.T) {
	f := newOffFixture(t, autoMode, autoMode)
	net := f.propose(t, "net", store.RemediationApproved)
	f.drain(t)
	fa := &fakeApplier{duringPlan: func() {
		r := f.get(t, net.ID)
		require.Equal(t, store.RemediationRunning, r.State)
		f.reload(t, offMode, autoMode)
		require.Equal(t, store.RemediationRunning, f.get(t, net.ID).State, "an apply in flight is not ended by the reload")
	}}
	f.d.rem.applyWith = fa
	f.d.rem.apply(t.Context(), "net")
	require.Empty(t, fa.applied)
	got := f.get(t, net.ID)
	require.Equal(t, store.RemediationRefused, got.State)
	const why = "remediation for workspace net is off (config): nothing applied"
	require.Equal(t, why, got.Reason)
	var out remediate.Outcome
	require.NoError(t, json.Unmarshal(got.Outcome, &out))
	require.Equal(t, []remediate.Refusal{{Code: remediate.CodeRemediationOff, Reason: why}}, out.Refusals)
	run, err := f.d.store.Run(t.Context(), got.ApplyRunID)
	require.NoError(t, err)
	require.Equal(t, drift.Status(remediate.ResultRefused), run.Status)
	require.Equal(t, []string{"remediation:refused:" + why}, f.drain(t))
}

// TestMayApplyRemediationOff: a remediation Job's proceed check answers
// "do not proceed" (remediation_off) once its workspace's remediation is
// off or the workspace is gone, and proceeds again when it is back on.
func TestMayApplyRemediationOff(t *testing.T) {
	d := newProceedDaemon(t)
	ws := func(mode string) *config.Config {
		return &config.Config{Workspaces: []config.Workspace{{Name: "net", Remediation: &config.Remediation{Mode: mode}}}}
	}
	d.cfg.Store(ws(config.RemediationAuto))
	require.Nil(t, d.mayApply(t.Context(), "apply-1"))
	d.cfg.Store(ws(config.RemediationOff))
	require.Equal(t, &remediate.Refusal{Code: remediate.CodeRemediationOff, Reason: "remediation for workspace net is off (config): nothing applied"},
		d.mayApply(t.Context(), "apply-1"))
	d.cfg.Store(&config.Config{})
	require.Equal(t, &remediate.Refusal{Code: remediate.CodeRemediationOff, Reason: "workspace net is no longer configured: nothing applied"},
		d.mayApply(t.Context(), "apply-1"))
	d.cfg.Store(ws(config.RemediationApprove))
	require.Nil(t, d.mayApply(t.Context(), "apply-1"))
}
