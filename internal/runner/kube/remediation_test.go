//go:build linux

package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

func cannedOutcome(approved engine.ChangeSet) engine.Outcome {
	return engine.Outcome{
		Result: engine.ResultApplied, Before: approved, ApplyStarted: true, Tool: "terraform 1.11.4",
		Phases: []drift.Phase{{Name: "apply", Duration: time.Second}},
	}
}

// applyPod plays a remediation pod whose apply succeeds: it checks that
// its spec is a remediation of approved, and after release (if non-nil)
// is closed, asks the daemon's proceed check with its token (as the real
// pod does right before the apply) and posts cannedOutcome.
func applyPod(t *testing.T, cs kubernetes.Interface, approved engine.ChangeSet, release <-chan struct{}) kubetest.PodFunc {
	return func(ctx context.Context, pod *corev1.Pod) (int, string) {
		spec, token, err := readRun(ctx, cs, pod)
		if err != nil {
			return 1, err.Error()
		}
		if spec.Remediation == nil || spec.Remediation.ChangeSetHash != approved.Hash() {
			t.Errorf("pod %s: not a remediation of the approved change set: %+v", pod.Name, spec.Remediation)
			return 1, "not a remediation spec"
		}
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				return 137, ""
			}
		}
		if ref := (&remote.Checker{Backoff: 50 * time.Millisecond}).Check(ctx, spec.ProceedURL, token); ref != nil {
			t.Errorf("pod %s: proceed check at %s: %s", pod.Name, spec.ProceedURL, ref)
			return 1, "proceed check refused"
		}
		p := &remote.Poster{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
		if err := p.Post(ctx, spec.CallbackURL, token, remote.OutcomeOf(spec.RunID, cannedOutcome(approved), nil)); err != nil {
			return 1, "runner: " + err.Error()
		}
		return 0, ""
	}
}

func TestRemediateAgainstAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "remediations"
	require.NoError(t, c.CreateNamespace(t.Context(), ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	k := &kubelet{plays: map[string]kubetest.ContainersFunc{}}
	c.PlayKubeletContainers(t, ns, k.run)
	d := newDaemon(t, cs, ns)
	a, approved := testApplier()

	t.Run("outcome delivered", func(t *testing.T) {
		// The pod's real code: the runner (no token) asks the proceed
		// check through the reporter right before its apply, and hands the
		// outcome over; the reporter asks and posts with the token.
		var asked bool
		apply := func(ctx context.Context, _ terraform.Request, rem *remote.Remediation, proceed func(context.Context) *engine.Refusal) (engine.Outcome, error) {
			if rem.ChangeSetHash != approved.Hash() {
				return engine.Outcome{}, fmt.Errorf("not the approved change set: %s", rem.ChangeSetHash)
			}
			if ref := proceed(ctx); ref != nil {
				return engine.Outcome{Result: engine.ResultRefused, Refusals: []engine.Refusal{*ref}}, nil
			}
			asked = true
			return cannedOutcome(approved), nil
		}
		k.setContainers("ok", realPod(t, cs, nil, apply))
		out, err := d.runner.Remediate(t.Context(), a, request("ok", "apply-ok"), approved)
		require.NoError(t, err)
		if diff := cmp.Diff(cannedOutcome(approved), out); diff != "" {
			t.Fatalf("outcome (-want +got):\n%s", diff)
		}
		require.True(t, asked, "the daemon answered the proceed check, through the reporter")
		jobs := jobsOf(t, cs, ns, "ok")
		require.Len(t, jobs, 1)
		job := jobs[0]
		require.Equal(t, JobName("ok", "apply-ok"), job.Name)
		require.Equal(t, KindRemediate, job.Labels[LabelKind])
		require.Equal(t, KindRemediate, job.Spec.Template.Labels[LabelKind])
		// The sandbox the API server kept is a detection's.
		ps := job.Spec.Template.Spec
		require.False(t, *ps.AutomountServiceAccountToken)
		require.True(t, *ps.Containers[0].SecurityContext.ReadOnlyRootFilesystem)
		require.True(t, *ps.SecurityContext.RunAsNonRoot)
		require.Equal(t, []corev1.Capability{"ALL"}, ps.Containers[0].SecurityContext.Capabilities.Drop)
	})

	t.Run("failing pod", func(t *testing.T) {
		k.set("fail", func(context.Context, *corev1.Pod) (int, string) {
			return 1, "runner: run apply-fail: deliver result: result refused: 400 Bad Request"
		})
		out, err := d.runner.Remediate(t.Context(), a, request("fail", "apply-fail"), approved)
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "job", re.Phase)
		require.Equal(t, engine.ResultFailed, out.Result)
		require.Regexp(t, `^job: pod driftwatch-fail-[0-9a-f]{10}-\w+ failed: exit code 1: runner: run apply-fail: deliver result: result refused: 400 Bad Request$`, out.Reason)
		require.True(t, out.ApplyStarted, "the pod ran: the apply may have begun")
	})

	t.Run("refused before a job exists", func(t *testing.T) {
		req := request("secrets", "apply-secrets")
		req.SecretEnvFiles = map[string]string{"TOKEN": "/daemon/token"}
		out, err := d.runner.Remediate(t.Context(), a, req, approved)
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "setup", re.Phase)
		require.Equal(t, engine.ResultFailed, out.Result)
		require.False(t, out.ApplyStarted, "no Job, no apply")
		require.Empty(t, jobsOf(t, cs, ns, "secrets"))
	})

	t.Run("kinds never adopt each other", func(t *testing.T) {
		release := make(chan struct{})
		k.set("mixed", applyPod(t, cs, approved, release))
		type result struct {
			out engine.Outcome
			err error
		}
		done := make(chan result, 1)
		go func() {
			out, err := d.runner.Remediate(t.Context(), a, request("mixed", "apply-mixed"), approved)
			done <- result{out, err}
		}()
		eventually(t, "remediation job created", func() bool { return len(jobsOf(t, cs, ns, "mixed")) == 1 })
		// While it applies, a detection of the workspace is refused.
		_, err := d.runner.Run(t.Context(), request("mixed", "detect-1"))
		require.ErrorIs(t, err, ErrBusy)

		// A restart: the remediation is interrupted, its Job left running.
		d.restart()
		r := <-done
		require.ErrorIs(t, r.err, ErrStopped)
		require.ErrorIs(t, r.err, engine.ErrLeftRunning, "the controller records nothing: the next daemon awaits the Job")
		require.Equal(t, engine.ResultFailed, r.out.Result)
		// The new daemon does not take the apply for a detection: a run
		// of the workspace is refused, not adopted.
		_, err = d.runner.Run(t.Context(), request("mixed", "detect-2"))
		require.ErrorIs(t, err, ErrBusy)
		require.Contains(t, err.Error(), "apply-mixed")
		// Nor for another apply, whose change set may differ.
		out, err := d.runner.Remediate(t.Context(), a, request("mixed", "apply-other"), approved)
		require.ErrorIs(t, err, ErrBusy)
		require.Equal(t, engine.ResultFailed, out.Result)
		require.False(t, out.ApplyStarted)

		adopt := func() *Adopted {
			adopted, err := d.runner.Adopt(t.Context())
			require.NoError(t, err)
			for _, x := range adopted {
				if x.Workspace == "mixed" {
					return x
				}
			}
			require.Fail(t, "not adopted", "adopted: %v", adopted)
			return nil
		}
		ad := adopt()
		require.True(t, ad.Remediation)
		require.Equal(t, "apply-mixed", ad.RunID)
		_, err = ad.Wait(t.Context())
		require.ErrorContains(t, err, "is a remediation: it delivers an outcome, not a plan")

		// This daemon stopping ends the wait, with nothing recorded: the
		// Job stays for the next daemon, which adopts it again.
		rec := &outcomes{}
		stopped := make(chan error, 1)
		go func() { stopped <- ad.AwaitRemediation(t.Context(), rec) }()
		d.restart()
		require.ErrorIs(t, <-stopped, ErrStopped)
		require.Empty(t, rec.got)
		ad = adopt()

		// A cancel does not end the wait: the Job is awaited to its
		// outcome, which is recorded under the apply's run.
		close(release)
		cancelled, cancel := context.WithCancel(t.Context())
		cancel()
		require.NoError(t, ad.AwaitRemediation(cancelled, rec))
		require.Equal(t, []string{"mixed apply-mixed applied"}, rec.got)
		out, err = ad.WaitOutcome(t.Context())
		require.NoError(t, err)
		require.Equal(t, engine.ResultApplied, out.Result)
		require.Len(t, jobsOf(t, cs, ns, "mixed"), 1, "awaited, not deleted or duplicated")
	})
}

// outcomes is an OutcomeRecorder that lists what it was handed.
type outcomes struct{ got []string }

func (o *outcomes) RecordAdopted(_ context.Context, workspace, runID string, out engine.Outcome) {
	o.got = append(o.got, fmt.Sprintf("%s %s %s", workspace, runID, out.Result))
}
