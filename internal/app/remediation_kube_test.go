package app

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/remediate"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// newProceedDaemon is the store and remediator the proceed check reads,
// with remediation "rem-1" of workspace "net" running its apply "apply-1".
func newProceedDaemon(t *testing.T) *daemon {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	d := &daemon{log: logger, store: st}
	d.cfg.Store(&config.Config{Workspaces: []config.Workspace{{Name: "net", Remediation: &config.Remediation{Mode: config.RemediationAuto}}}})
	d.rem = &remediator{d: d, log: logger}
	now := time.Now().UTC().Truncate(time.Second)
	cs, _ := json.Marshal(remediate.ChangeSet{Entries: []remediate.Entry{{Address: "dwtest_file.a", Action: "update"}}})
	require.NoError(t, st.CreateRemediation(t.Context(), store.Remediation{
		ID: "rem-1", Workspace: "net", DetectRunID: "detect-1", Mode: config.RemediationAuto, ChangeSet: cs, ChangeSetHash: "h",
		State: store.RemediationApproved, CreatedAt: now, DecidedAt: now, DecidedBy: "auto",
	}))
	_, err = st.TransitionRemediation(t.Context(), "rem-1", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationRunning, At: now, ApplyRunID: "apply-1"})
	require.NoError(t, err)
	require.NoError(t, st.StartRun(t.Context(), store.Run{ID: "apply-1", Workspace: "net", Trigger: triggerRemediate, StartedAt: now, Status: store.RunRunning}))
	return d
}

// TestMayApply: a remediation pod's proceed check goes ahead only while
// the kill switch is off and the run's remediation is running (or
// interrupted by a restart, its Job adopted); anything else refuses.
func TestMayApply(t *testing.T) {
	paused := &remediate.Refusal{Code: remediate.CodePaused, Reason: "remediation is paused (global kill switch)"}
	t.Run("running", func(t *testing.T) {
		d := newProceedDaemon(t)
		require.Nil(t, d.mayApply(t.Context(), "apply-1"))
		d.rem.paused.Store(true)
		require.Equal(t, paused, d.mayApply(t.Context(), "apply-1"))
		d.rem.paused.Store(false)
		off := false
		d.cfg.Store(&config.Config{Remediation: config.RemediationSwitch{Enabled: &off}, Workspaces: d.cfg.Load().Workspaces})
		require.Equal(t, paused, d.mayApply(t.Context(), "apply-1"), "remediation.enabled: false")
	})
	t.Run("unknown run", func(t *testing.T) {
		d := newProceedDaemon(t)
		require.Equal(t, &remediate.Refusal{Code: remediate.CodeNothingApproved, Reason: "no remediation is applied by run apply-9"},
			d.mayApply(t.Context(), "apply-9"))
	})
	t.Run("interrupted by a restart", func(t *testing.T) {
		d := newProceedDaemon(t)
		_, err := d.store.InterruptRemediations(t.Context(), time.Now())
		require.NoError(t, err)
		require.Nil(t, d.mayApply(t.Context(), "apply-1"), "its adopted Job may apply")
	})
	t.Run("finished", func(t *testing.T) {
		d := newProceedDaemon(t)
		_, err := d.store.TransitionRemediation(t.Context(), "rem-1", []store.RemediationState{store.RemediationRunning},
			store.Transition{State: store.RemediationFailed, At: time.Now(), Reason: "boom", Outcome: json.RawMessage(`{"result":"failed"}`)})
		require.NoError(t, err)
		require.Equal(t, &remediate.Refusal{Code: remediate.CodeNothingApproved, Reason: "remediation rem-1 is failed: no longer approved to apply"},
			d.mayApply(t.Context(), "apply-1"))
	})
}

// TestReapprove: a remediation the kill switch held before its apply is
// approved again, by whoever approved it, so it is queued on resume.
func TestReapprove(t *testing.T) {
	d := newProceedDaemon(t)
	before, err := d.store.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	out := remediate.Outcome{Result: remediate.ResultRefused, Refusals: []remediate.Refusal{{Code: remediate.CodePaused, Reason: "paused"}}}
	require.True(t, heldByKillSwitch(out))
	require.False(t, heldByKillSwitch(remediate.Outcome{Result: remediate.ResultRefused, Refusals: []remediate.Refusal{{Code: remediate.CodeDaemonUnreachable}}}))
	d.rem.reapprove(t.Context(), d.log, before, store.RemediationRunning, "paused")
	after, err := d.store.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, after.State)
	require.Equal(t, "paused", after.Reason)
	require.Equal(t, "auto", after.DecidedBy)
	require.True(t, before.DecidedAt.Equal(after.DecidedAt), "approved when it was")
	require.Empty(t, after.Outcome)

	// From "failed" (a restart marked the apply interrupted, its adopted
	// Job then found paused): approved again, and no longer finished.
	_, err = d.store.TransitionRemediation(t.Context(), "rem-1", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationFailed, At: time.Now(), Reason: "interrupted"})
	require.NoError(t, err)
	failed, err := d.store.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.False(t, failed.FinishedAt.IsZero())
	d.rem.reapprove(t.Context(), d.log, failed, store.RemediationFailed, "paused")
	again, err := d.store.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, again.State)
	require.True(t, again.FinishedAt.IsZero(), "not finished: %v", again.FinishedAt)
}

// A remediation refused at apply time only for a passing reason (state
// lock held, daemon unreachable from the pod) may be proposed again by the
// next detection; any other refusal stands for its change set.
func TestRefusedTransiently(t *testing.T) {
	refused := func(codes ...string) store.Remediation {
		out := remediate.Outcome{Result: remediate.ResultRefused}
		for _, c := range codes {
			out.Refusals = append(out.Refusals, remediate.Refusal{Code: c})
		}
		b, err := json.Marshal(out)
		require.NoError(t, err)
		return store.Remediation{State: store.RemediationRefused, Outcome: b}
	}
	require.True(t, refusedTransiently(refused(remediate.CodeDaemonUnreachable)))
	require.True(t, refusedTransiently(refused(remediate.CodeStateLocked)))
	require.False(t, refusedTransiently(refused(remediate.CodeStateLocked, remediate.CodePlanChanged)))
	require.False(t, refusedTransiently(refused(remediate.CodePlanChanged)))
	require.False(t, refusedTransiently(refused()))
	require.False(t, refusedTransiently(store.Remediation{State: store.RemediationRefused}), "refused by the envelope at proposal: no outcome")
	failed := refused(remediate.CodeDaemonUnreachable)
	failed.State = store.RemediationFailed
	require.False(t, refusedTransiently(failed))
}
