package remediation

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/store"
)

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

		_, err := f.c.Approve(t.Context(), net.ID, net.ChangeSetHash)
		require.ErrorIs(t, err, store.ErrConflict) // 409
		require.EqualError(t, err, fmt.Sprintf("remediation %q: conflict: remediation for workspace net is off (config)", net.ID))
		require.Equal(t, reason, f.get(t, net.ID).Reason, "the reload's reason stays")

		// Nothing of net is queued or applied.
		fa := &fakeApplier{}
		f.c.applier = fa
		f.c.Apply(t.Context(), "net", "", nil)
		require.Empty(t, fa.applied)
		require.Equal(t, store.RemediationExpired, f.get(t, net.ID).State)

		// db still approves and applies.
		_, err = f.c.Approve(t.Context(), db.ID, db.ChangeSetHash)
		require.NoError(t, err)
		f.c.Apply(t.Context(), "db", "", nil)
		require.Len(t, fa.applied, 1)
		require.Equal(t, store.RemediationApplied, f.get(t, db.ID).State)
		require.Equal(t, []string{"db/verify"}, f.host.detections(), "a verification detection follows the apply, none the refusals")
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
		var out engine.Outcome
		require.NoError(t, json.Unmarshal(got.Outcome, &out))
		require.Equal(t, engine.Outcome{Result: engine.ResultRefused, Reason: reason,
			Refusals: []engine.Refusal{{Code: engine.CodeRemediationOff, Reason: reason}}}, out)
		require.True(t, refusedTransiently(got), "proposed again once remediation is back on")
		require.Equal(t, []string{"remediation:refused:" + reason}, f.drain(t), "announced like any refusal")

		// It never applies.
		fa := &fakeApplier{}
		f.c.applier = fa
		f.c.Apply(t.Context(), "net", "", nil)
		require.Empty(t, fa.applied)
		runs, err := f.st.Runs(t.Context(), "net", 10)
		require.NoError(t, err)
		for _, r := range runs {
			require.NotEqual(t, TriggerRemediate, r.Trigger, "no apply run recorded")
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
		_, err := f.c.Approve(t.Context(), web.ID, "")
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
		f.host.leading.Store(false)
		f.reload(t, offMode, approveMode)
		require.Equal(t, store.RemediationPending, f.get(t, net.ID).State)
		// The leader's loop ends it (here: one tick's sweep), with the
		// reason of the config it finds.
		rs, err := f.st.Remediations(t.Context(), "", 200)
		require.NoError(t, err)
		kept := f.c.sweepOff(t.Context(), rs, time.Now().UTC())
		require.Empty(t, kept)
		got := f.get(t, net.ID)
		require.Equal(t, store.RemediationExpired, got.State)
		require.Equal(t, "remediation for workspace net is off (config)", got.Reason)
	})

	t.Run("the loop before the reload's hook", func(t *testing.T) {
		f := newOffFixture(t, approveMode, approveMode)
		net := f.propose(t, "net", store.RemediationPending)
		db := f.propose(t, "db", store.RemediationApproved)
		sweep := func() {
			rs, err := f.st.Remediations(t.Context(), "", 200)
			require.NoError(t, err)
			f.c.sweepOff(t.Context(), rs, time.Now().UTC())
		}
		sweep() // the loop's first tick: nothing is off
		old := f.swapConfig(t, offMode, offMode)
		sweep() // the reload published, its Reloaded not yet run
		require.Equal(t, "remediation turned off by config reload", f.get(t, net.ID).Reason)
		require.Equal(t, "remediation turned off by config reload", f.get(t, db.ID).Reason)
		f.c.Reloaded(t.Context(), old)
		require.Equal(t, store.RemediationExpired, f.get(t, net.ID).State)
		require.Equal(t, store.RemediationRefused, f.get(t, db.ID).State)
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
	f.swapConfig(t, offMode, offMode) // without the reload hook

	_, err := f.c.Approve(t.Context(), net.ID, "")
	require.ErrorIs(t, err, store.ErrConflict)
	require.ErrorContains(t, err, "remediation for workspace net is off (config)")
	got := f.get(t, net.ID)
	require.Equal(t, store.RemediationExpired, got.State)
	require.Equal(t, "remediation for workspace net is off (config)", got.Reason)

	fa := &fakeApplier{}
	f.c.applier = fa
	f.c.Apply(t.Context(), "db", "", nil)
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
	f.c.paused.Store(true)
	got, err := f.c.Approve(t.Context(), net.ID, net.ChangeSetHash)
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, got.State)

	fa := &fakeApplier{}
	f.c.applier = fa
	f.c.Apply(t.Context(), "net", "", nil)
	require.Empty(t, fa.applied, "held by the kill switch")
	require.Equal(t, store.RemediationApproved, f.get(t, net.ID).State)
	require.Empty(t, f.host.detections(), "nothing applied: no verification")

	f.c.paused.Store(false)
	f.c.Apply(t.Context(), "net", "", nil)
	require.Len(t, fa.applied, 1)
	require.Equal(t, store.RemediationApplied, f.get(t, net.ID).State)
	require.Equal(t, []string{"net/verify"}, f.host.detections())
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
	f.c.applier = fa
	var log strings.Builder
	require.Equal(t, drift.Status(engine.ResultRefused), f.c.Apply(t.Context(), "net", "", &log))
	require.Empty(t, fa.applied)
	got := f.get(t, net.ID)
	require.Equal(t, store.RemediationRefused, got.State)
	const why = "remediation for workspace net is off (config): nothing applied"
	require.Equal(t, why, got.Reason)
	require.Equal(t, "== remediation "+net.ID+": change set "+net.ChangeSetHash+", 1 to apply ==\n"+
		"== refused: "+why+" ==\n", log.String(), "the apply run's log begins and ends with the remediation")
	var out engine.Outcome
	require.NoError(t, json.Unmarshal(got.Outcome, &out))
	require.Equal(t, []engine.Refusal{{Code: engine.CodeRemediationOff, Reason: why}}, out.Refusals)
	run, err := f.st.Run(t.Context(), got.ApplyRunID)
	require.NoError(t, err)
	require.Equal(t, drift.Status(engine.ResultRefused), run.Status)
	require.Equal(t, []string{"remediation:refused:" + why}, f.drain(t))
}

// TestMayApplyRemediationOff: a remediation Job's proceed check answers
// "do not proceed" (remediation_off) once its workspace's remediation is
// off or the workspace is gone, and proceeds again when it is back on.
func TestMayApplyRemediationOff(t *testing.T) {
	f := newProceedFixture(t)
	ws := func(mode string) *config.Config {
		return &config.Config{Workspaces: []config.Workspace{{Name: "net", Remediation: &config.Remediation{Mode: mode}}}}
	}
	f.host.cfg.Store(ws(config.RemediationAuto))
	require.Nil(t, f.c.MayApply(t.Context(), "apply-1"))
	f.host.cfg.Store(ws(config.RemediationOff))
	require.Equal(t, &engine.Refusal{Code: engine.CodeRemediationOff, Reason: "remediation for workspace net is off (config): nothing applied"},
		f.c.MayApply(t.Context(), "apply-1"))
	f.host.cfg.Store(&config.Config{})
	require.Equal(t, &engine.Refusal{Code: engine.CodeRemediationOff, Reason: "workspace net is no longer configured: nothing applied"},
		f.c.MayApply(t.Context(), "apply-1"))
	f.host.cfg.Store(ws(config.RemediationApprove))
	require.Nil(t, f.c.MayApply(t.Context(), "apply-1"))
}
