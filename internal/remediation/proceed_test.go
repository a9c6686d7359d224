package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/run"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// TestMayApply: a remediation pod's proceed check goes ahead only while
// the kill switch is off and the run's remediation is running (or
// interrupted by a restart, its Job adopted); anything else refuses.
func TestMayApply(t *testing.T) {
	paused := &engine.Refusal{Code: engine.CodePaused, Reason: "remediation is paused (global kill switch)"}
	t.Run("running", func(t *testing.T) {
		f := newProceedFixture(t)
		require.Nil(t, f.c.MayApply(t.Context(), "apply-1"))
		f.c.paused.Store(true)
		require.Equal(t, paused, f.c.MayApply(t.Context(), "apply-1"))
		f.c.paused.Store(false)
		off := false
		f.host.cfg.Store(&config.Config{Remediation: config.RemediationSwitch{Enabled: &off}, Workspaces: f.host.cfg.Load().Workspaces})
		require.Equal(t, paused, f.c.MayApply(t.Context(), "apply-1"), "remediation.enabled: false")
	})
	t.Run("unknown run", func(t *testing.T) {
		f := newProceedFixture(t)
		require.Equal(t, &engine.Refusal{Code: engine.CodeNothingApproved, Reason: "no remediation is applied by run apply-9"},
			f.c.MayApply(t.Context(), "apply-9"))
	})
	t.Run("interrupted by a restart", func(t *testing.T) {
		f := newProceedFixture(t)
		_, err := f.st.InterruptRemediations(t.Context(), time.Now())
		require.NoError(t, err)
		require.Nil(t, f.c.MayApply(t.Context(), "apply-1"), "its adopted Job may apply")
	})
	t.Run("finished", func(t *testing.T) {
		f := newProceedFixture(t)
		_, err := f.st.TransitionRemediation(t.Context(), "rem-1", []store.RemediationState{store.RemediationRunning},
			store.Transition{State: store.RemediationFailed, At: time.Now(), Reason: "boom", Outcome: json.RawMessage(`{"result":"failed"}`)})
		require.NoError(t, err)
		require.Equal(t, &engine.Refusal{Code: engine.CodeNothingApproved, Reason: "remediation rem-1 is failed: no longer approved to apply"},
			f.c.MayApply(t.Context(), "apply-1"))
	})
}

// TestReapprove: a remediation the kill switch held before its apply is
// approved again, by whoever approved it, so it is queued on resume.
func TestReapprove(t *testing.T) {
	f := newProceedFixture(t)
	before, err := f.st.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	out := engine.Outcome{Result: engine.ResultRefused, Refusals: []engine.Refusal{{Code: engine.CodePaused, Reason: "paused"}}}
	require.True(t, heldByKillSwitch(out))
	require.False(t, heldByKillSwitch(engine.Outcome{Result: engine.ResultRefused, Refusals: []engine.Refusal{{Code: engine.CodeDaemonUnreachable}}}))
	f.c.reapprove(t.Context(), f.c.log, before, store.RemediationRunning, "paused")
	after, err := f.st.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, after.State)
	require.Equal(t, "paused", after.Reason)
	require.Equal(t, "auto", after.DecidedBy)
	require.True(t, before.DecidedAt.Equal(after.DecidedAt), "approved when it was")
	require.Empty(t, after.Outcome)

	// From "failed" (a restart marked the apply interrupted, its adopted
	// Job then found paused): approved again, and no longer finished.
	_, err = f.st.TransitionRemediation(t.Context(), "rem-1", []store.RemediationState{store.RemediationApproved},
		store.Transition{State: store.RemediationFailed, At: time.Now(), Reason: "interrupted"})
	require.NoError(t, err)
	failed, err := f.st.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.False(t, failed.FinishedAt.IsZero())
	f.c.reapprove(t.Context(), f.c.log, failed, store.RemediationFailed, "paused")
	again, err := f.st.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationApproved, again.State)
	require.True(t, again.FinishedAt.IsZero(), "not finished: %v", again.FinishedAt)
}

// A remediation refused at apply time only for a passing reason (state
// lock held, daemon unreachable from the pod) may be proposed again by the
// next detection; any other refusal stands for its change set.
func TestRefusedTransiently(t *testing.T) {
	refused := func(codes ...string) store.Remediation {
		out := engine.Outcome{Result: engine.ResultRefused}
		for _, c := range codes {
			out.Refusals = append(out.Refusals, engine.Refusal{Code: c})
		}
		b, err := json.Marshal(out)
		require.NoError(t, err)
		return store.Remediation{State: store.RemediationRefused, Outcome: b}
	}
	require.True(t, refusedTransiently(refused(engine.CodeDaemonUnreachable)))
	require.True(t, refusedTransiently(refused(engine.CodeStateLocked)))
	require.False(t, refusedTransiently(refused(engine.CodeStateLocked, engine.CodePlanChanged)))
	require.False(t, refusedTransiently(refused(engine.CodePlanChanged)))
	require.False(t, refusedTransiently(refused()))
	require.False(t, refusedTransiently(store.Remediation{State: store.RemediationRefused}), "refused by the envelope at proposal: no outcome")
	failed := refused(engine.CodeDaemonUnreachable)
	failed.State = store.RemediationFailed
	require.False(t, refusedTransiently(failed))
}

// RecordAdopted records an adopted Job's outcome on the remediation a
// restart marked failed, and finishes its apply run; an outcome for a run
// no remediation applies changes nothing.
func TestRecordAdopted(t *testing.T) {
	f := newProceedFixture(t)
	_, err := f.st.InterruptRemediations(t.Context(), time.Now()) // the restart
	require.NoError(t, err)

	f.c.RecordAdopted(t.Context(), "net", "apply-9", engine.Outcome{Result: engine.ResultApplied})
	r, err := f.st.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationFailed, r.State)
	require.Empty(t, r.Outcome)

	f.c.RecordAdopted(t.Context(), "net", "apply-1", engine.Outcome{Result: engine.ResultApplied, ApplyStarted: true, Tool: "terraform 1.11.4"})
	r, err = f.st.Remediation(t.Context(), "rem-1")
	require.NoError(t, err)
	require.Equal(t, store.RemediationApplied, r.State)
	var out engine.Outcome
	require.NoError(t, json.Unmarshal(r.Outcome, &out))
	require.Equal(t, "terraform 1.11.4", out.Tool)
	run, err := f.st.Run(t.Context(), "apply-1")
	require.NoError(t, err)
	require.Equal(t, drift.Status(engine.ResultApplied), run.Status)
	require.Equal(t, "terraform 1.11.4", run.Tool)
}

// leftRunning is an Applier whose Job goes on applying: this daemon
// stopped.
type leftRunning struct{}

func (leftRunning) Remediate(context.Context, *engine.Applier, terraform.Request, engine.ChangeSet) (engine.Outcome, error) {
	err := fmt.Errorf("%w: kubernetes runner stopped", ErrLeftRunning)
	return engine.Outcome{Result: engine.ResultFailed, Reason: err.Error(), ApplyStarted: true}, err
}

// An apply left running when this daemon stops records nothing: the
// remediation and its run stay running for the next daemon (which marks
// them interrupted, then records the Job's outcome: RecordAdopted), and
// no verification detection follows.
func TestApplyLeftRunning(t *testing.T) {
	f := newOffFixture(t, autoMode, autoMode)
	net := f.propose(t, "net", store.RemediationApproved)
	f.c.applier = leftRunning{}
	f.c.Apply(t.Context(), "net", "apply-7", nil)
	got := f.get(t, net.ID)
	require.Equal(t, store.RemediationRunning, got.State)
	require.Empty(t, got.Outcome)
	run, err := f.st.Run(t.Context(), "apply-7")
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, run.Status)
	require.Empty(t, f.host.detections())
}

// The controller records its apply runs under the trigger the run
// lifecycle queues and recognises them by.
func TestTriggerRemediateIsTheRunLifecycles(t *testing.T) {
	require.Equal(t, run.TriggerRemediate, TriggerRemediate)
}
