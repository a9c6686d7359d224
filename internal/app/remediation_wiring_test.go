package app

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The controller's behaviour is tested in internal/remediation; these
// tests check that the daemon wires it: newRemediator, the reload hook,
// the scheduler's remediate runs, the proceed check, the API's view and
// the Host the controller reads the daemon through.

// wiringDaemon is a leading daemon built by newDaemon on a real store and
// config file (net and db, remediation per mode). Before that, the store
// holds a paused flag (if paused) and remediation "rem-run" of db running
// its apply "apply-1", as a restart finds them.
type wiringDaemon struct {
	d    *daemon
	dir  string
	path string
}

func (w *wiringDaemon) writeConfig(t *testing.T, net, db string) {
	t.Helper()
	w.path = writeConfig(t, w.dir, net, db)
}

func newWiringDaemon(t *testing.T, paused bool) *wiringDaemon {
	t.Helper()
	w := &wiringDaemon{dir: t.TempDir()}
	w.writeConfig(t, config.RemediationApprove, config.RemediationApprove)
	w.d = newTestDaemon(t, w.path, nil, func(st store.DaemonStore) {
		require.NoError(t, st.SetRemediationPaused(t.Context(), paused))
		w.storeRemediation(t, st, "rem-run", "db", store.RemediationApproved)
		_, err := st.TransitionRemediation(t.Context(), "rem-run", []store.RemediationState{store.RemediationApproved},
			store.Transition{State: store.RemediationRunning, At: time.Now().UTC(), ApplyRunID: "apply-1"})
		require.NoError(t, err)
	})
	return w
}

// storeRemediation stores remediation id of ws in state (pending or
// approved), without an announcement.
func (w *wiringDaemon) storeRemediation(t *testing.T, st store.RemediationStore, id, ws string, state store.RemediationState) {
	t.Helper()
	now := time.Now().UTC()
	cs := engine.ChangeSet{Entries: []engine.Entry{{Address: "dwtest_file.a", Action: "update", Attributes: []string{"content"}}}}
	csJSON, err := json.Marshal(cs)
	require.NoError(t, err)
	r := store.Remediation{ID: id, Workspace: ws, DetectRunID: "detect-" + id, Mode: config.RemediationApprove,
		ChangeSet: csJSON, ChangeSetHash: cs.Hash(), State: state, CreatedAt: now}
	switch state {
	case store.RemediationPending:
		r.ExpiresAt = now.Add(time.Hour)
	case store.RemediationApproved:
		r.DecidedAt, r.DecidedBy = now, "api"
	}
	require.NoError(t, st.CreateRemediation(t.Context(), r))
}

func (w *wiringDaemon) get(t *testing.T, id string) store.Remediation {
	t.Helper()
	r, err := w.d.store.Remediation(t.Context(), id)
	require.NoError(t, err)
	return r
}

// reload rewrites the config file and reloads it (inventory.Watcher.Reload).
func (w *wiringDaemon) reload(t *testing.T, net, db string) {
	t.Helper()
	w.writeConfig(t, net, db)
	require.True(t, w.d.inv.Reload())
}

// TestRemediationWiringStart: newDaemon's controller reads the persisted kill
// switch and marks the apply a previous process left running failed.
func TestRemediationWiringStart(t *testing.T) {
	w := newWiringDaemon(t, true)
	enabled, paused, err := w.d.control().Status(t.Context())
	require.NoError(t, err)
	require.True(t, enabled)
	require.True(t, paused)
	got := w.get(t, "rem-run")
	require.Equal(t, store.RemediationFailed, got.State)
	require.Empty(t, got.Outcome, "no outcome: its adopted Job's outcome may still be recorded")
	require.Equal(t, &engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"},
		w.d.mayApply(t.Context(), "apply-1"), "the proceed check reads the same controller")
}

// TestRemediationWiringReload: daemon.reload tells the controller after
// the new config is in place (a workspace turned off ends its pending
// remediation with the reload's reason), a standby's reload ends nothing,
// and the proceed check and the API read the reloaded config.
func TestRemediationWiringReload(t *testing.T) {
	w := newWiringDaemon(t, false)
	require.Nil(t, w.d.mayApply(t.Context(), "apply-1"), "interrupted by the restart, its Job may apply")
	w.storeRemediation(t, w.d.store, "rem-net", "net", store.RemediationPending)
	w.storeRemediation(t, w.d.store, "rem-db", "db", store.RemediationPending)

	w.d.leader.SetLeading(false)
	w.reload(t, config.RemediationApprove, config.RemediationOff)
	require.Equal(t, store.RemediationPending, w.get(t, "rem-db").State, "a standby writes nothing")
	w.d.leader.SetLeading(true)

	w.reload(t, config.RemediationOff, config.RemediationOff)
	got := w.get(t, "rem-net")
	require.Equal(t, store.RemediationExpired, got.State)
	require.Equal(t, "remediation turned off by config reload", got.Reason)
	require.Equal(t, store.RemediationPending, w.get(t, "rem-db").State, "db was off already: the loop's sweep ends it, not this reload")
	require.Equal(t, &engine.Refusal{Code: engine.CodeRemediationOff, Reason: "remediation for workspace db is off (config): nothing applied"},
		w.d.mayApply(t.Context(), "apply-1"))
	_, err := w.d.control().Approve(t.Context(), "rem-db", "")
	require.ErrorIs(t, err, store.ErrConflict)
	require.ErrorContains(t, err, "remediation for workspace db is off (config)")
}

// TestRemediationWiringAPI: the API's view is the controller, with the
// server's hash-mismatch error (409), recording the caller the server
// authenticated.
func TestRemediationWiringAPI(t *testing.T) {
	w := newWiringDaemon(t, false)
	w.storeRemediation(t, w.d.store, "rem-net", "net", store.RemediationPending)
	var ctl server.RemediationControl = w.d.control()
	_, err := ctl.Approve(t.Context(), "rem-net", "not-the-hash")
	require.ErrorIs(t, err, server.ErrHashMismatch)
	rs, err := ctl.List(t.Context(), "net")
	require.NoError(t, err)
	require.Len(t, rs, 1)
	ctx := auth.WithIdentity(t.Context(), auth.Identity{Method: auth.MethodTokenPrefix + "ci"})
	got, err := ctl.Approve(ctx, "rem-net", rs[0].ChangeSetHash)
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, got.State)
	require.Equal(t, "token:ci", got.DecidedBy)
}

// TestRemediationWiringSchedulerRun: a remediate run of the scheduler is
// the controller's Apply (here: a workspace turned off, so it refuses
// the approved remediation before anything runs), never a queued
// detection run.
func TestRemediationWiringSchedulerRun(t *testing.T) {
	w := newWiringDaemon(t, false)
	w.storeRemediation(t, w.d.store, "rem-net", "net", store.RemediationApproved)
	// Reloaded as a standby: the controller's reload hook ends nothing.
	w.d.leader.SetLeading(false)
	w.reload(t, config.RemediationOff, config.RemediationApprove)
	w.d.leader.SetLeading(true)

	w.d.schedule(t)
	require.NoError(t, w.d.runs.QueueApply("net"))
	require.Eventually(t, func() bool { return w.get(t, "rem-net").State == store.RemediationRefused }, 10*time.Second, time.Millisecond)
	got := w.get(t, "rem-net")
	require.Equal(t, "remediation for workspace net is off (config)", got.Reason)
	runs, err := w.d.store.Runs(t.Context(), "net", 10)
	require.NoError(t, err)
	require.Empty(t, runs, "no run recorded")
}

// TestRemediationHost: the Host the controller reads the daemon through.
func TestRemediationHost(t *testing.T) {
	w := newWiringDaemon(t, false)
	h := remediationHost{w.d}
	require.Same(t, w.d.inv.Config(), h.Config())
	tg, ok := h.Target("net")
	require.True(t, ok)
	target := w.d.inv.Snapshot().Targets["net"]
	require.Equal(t, target.Request, tg.Request)
	require.Equal(t, target.Rules, tg.Rules)
	_, ok = h.Target("nope")
	require.False(t, ok)
	plan, ok := h.AlertPlan("db")
	require.True(t, ok)
	want := w.d.inv.Snapshot().Plans["db"]
	require.Equal(t, want.Policy, plan.Policy)
	require.Equal(t, want.Targets, plan.Targets)
	require.NotEmpty(t, plan.Targets)
	_, ok = h.AlertPlan("nope")
	require.False(t, ok)
	require.True(t, h.Leading())
	w.d.leader.SetLeading(false)
	require.False(t, h.Leading())
	w.d.leader.SetLeading(true)

	// An apply is queued in the workspace's slot under its own trigger;
	// the scheduler refuses a second one and an unknown workspace.
	require.NoError(t, h.QueueApply("net"))
	require.ErrorIs(t, h.QueueApply("net"), schedule.ErrBusy)
	require.ErrorIs(t, h.QueueApply("nope"), schedule.ErrUnknownJob)
	runs, err := w.d.store.Runs(t.Context(), "net", 10)
	require.NoError(t, err)
	require.Empty(t, runs, "a queued apply is not recorded as a queued run")
	_, err = w.d.runs.Trigger("net")
	require.ErrorIs(t, err, schedule.ErrBusy, "a manual run waits for the apply")
}
