//go:build linux

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

func TestRunnerAgainstAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "runs"
	// The restricted Pod Security level is enforced: a run pod that breaks
	// it is refused when the Job controller creates it.
	require.NoError(t, c.CreateNamespace(t.Context(), ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	k := &kubelet{plays: map[string]kubetest.ContainersFunc{}}
	c.PlayKubeletContainers(t, ns, k.run)
	d := newDaemon(t, cs, ns)

	t.Run("result delivered", func(t *testing.T) {
		// The pod's real code: the runner hands the result to the
		// reporter, which alone has the token and posts it.
		k.setContainers("ok", realPod(t, cs, runnerFunc(func(context.Context, terraform.Request) (runner.Result, error) {
			return canned("run-ok").Unpack()
		}), nil))
		res, err := d.runner.Run(t.Context(), request("ok", "run-ok"))
		require.NoError(t, err)
		want, _ := canned("run-ok").Unpack()
		if diff := cmp.Diff(want, res); diff != "" {
			t.Fatalf("result (-want +got):\n%s", diff)
		}
		jobs := jobsOf(t, cs, ns, "ok")
		require.Len(t, jobs, 1)
		job := jobs[0]
		require.Equal(t, JobName("ok", "run-ok"), job.Name)
		require.Equal(t, map[string]string{
			"app.kubernetes.io/managed-by": "driftwatch", "app.kubernetes.io/name": "driftwatch",
			"app.kubernetes.io/component": "runner", "driftwatch.io/workspace": "ok", "driftwatch.io/run-id": "run-ok",
			"driftwatch.io/kind": "detect",
		}, job.Labels)
		// The server kept every sandbox field (and defaulted nothing away),
		// and admitted the pod (restricted Pod Security) with its two
		// containers: the runner without the token, as another user than
		// the reporter.
		ps := job.Spec.Template.Spec
		require.False(t, *ps.AutomountServiceAccountToken)
		require.Len(t, ps.Containers, 2)
		for _, c := range ps.Containers {
			require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem, c.Name)
			require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop, c.Name)
		}
		runnerC, reporterC := ps.Containers[0], ps.Containers[1]
		require.Equal(t, []string{ContainerName, ReporterContainerName}, []string{runnerC.Name, reporterC.Name})
		for _, m := range runnerC.VolumeMounts {
			require.NotEqual(t, "token", m.Name, "the runner container mounts the token")
			require.NotEqual(t, TokenDir, m.MountPath)
		}
		require.Contains(t, reporterC.VolumeMounts, corev1.VolumeMount{Name: "token", MountPath: TokenDir, ReadOnly: true})
		require.NotEqual(t, *runnerC.SecurityContext.RunAsUser, *reporterC.SecurityContext.RunAsUser)
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		require.Equal(t, corev1.PodSucceeded, pods.Items[0].Status.Phase, "the result was taken once the pod succeeded")
		require.Equal(t, int32(0), *job.Spec.BackoffLimit)
		require.Len(t, job.Spec.PodFailurePolicy.Rules, 2)
		// The Secret is owned by the Job, for the garbage collector.
		sec, err := cs.CoreV1().Secrets(ns).Get(t.Context(), job.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, sec.OwnerReferences, 1)
		require.Equal(t, job.UID, sec.OwnerReferences[0].UID)
		// The real Job controller completes the Job; an Event records
		// the outcome.
		eventually(t, "job complete", func() bool {
			j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), job.Name, metav1.GetOptions{})
			done, cond := false, (*batchv1.JobCondition)(nil)
			if err == nil {
				done, cond = jobFinished(j)
			}
			return done && cond.Type == batchv1.JobComplete
		})
		evs, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + job.Name})
		require.NoError(t, err)
		var reasons []string
		for _, e := range evs.Items {
			reasons = append(reasons, e.Reason)
		}
		require.Contains(t, reasons, "RunSucceeded")
	})

	t.Run("failing pod", func(t *testing.T) {
		k.set("fail", func(context.Context, *corev1.Pod) (int, string) {
			return 1, "time=... level=INFO msg=starting\nrunner: run run-fail: deliver result: result refused: 403 Forbidden: invalid token"
		})
		_, err := d.runner.Run(t.Context(), request("fail", "run-fail"))
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "job", re.Phase)
		require.Regexp(t, `^pod driftwatch-fail-[0-9a-f]{10}-\w+ failed: exit code 1: runner: run run-fail: deliver result: result refused: 403 Forbidden: invalid token$`, re.Reason)
		require.NotErrorIs(t, err, terraform.ErrTimeout)
	})

	t.Run("deadline exceeded", func(t *testing.T) {
		k.set("slow", func(ctx context.Context, _ *corev1.Pod) (int, string) {
			<-ctx.Done() // until the Job controller deletes the pod
			return 137, ""
		})
		req := request("slow", "run-slow")
		req.Timeout, req.KillGrace = time.Second, time.Second // deadline 3 s
		start := time.Now()
		_, err := d.runner.Run(t.Context(), req)
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.ErrorIs(t, err, terraform.ErrTimeout)
		require.Equal(t, "run timed out: job deadline exceeded after 3s", re.Reason)
		require.GreaterOrEqual(t, time.Since(start), 3*time.Second)
	})

	t.Run("one active job per workspace", func(t *testing.T) {
		release := make(chan struct{})
		k.set("busy", deliver(t, cs, release))
		type outcome struct {
			runID string
			res   runner.Result
			err   error
		}
		out := make(chan outcome, 8)
		var wg sync.WaitGroup
		run := func(id string) {
			wg.Go(func() {
				res, err := d.runner.Run(t.Context(), request("busy", id))
				out <- outcome{id, res, err}
			})
		}
		// Five triggers at once, each its own run: one Job, four refused.
		for _, id := range []string{"b1", "b2", "b3", "b4", "b5"} {
			run(id)
		}
		var winner string
		for range 4 {
			o := <-out
			require.ErrorIs(t, o.err, ErrBusy, "run %s", o.runID)
			var be *BusyError
			require.ErrorAs(t, o.err, &be)
			require.NotEqual(t, o.runID, be.RunID)
			require.Contains(t, o.err.Error(), "at most one run per workspace")
			if winner != "" {
				require.Equal(t, winner, be.RunID)
			}
			winner = be.RunID
		}
		jobs := jobsOf(t, cs, ns, "busy")
		require.Len(t, jobs, 1)
		require.Equal(t, JobName("busy", winner), jobs[0].Name)
		// The same run submitted twice more (a retried trigger) joins the
		// running Job instead of refusing or duplicating it.
		run(winner)
		run(winner)
		time.Sleep(200 * time.Millisecond)
		require.Len(t, jobsOf(t, cs, ns, "busy"), 1)
		close(release)
		wg.Wait()
		close(out)
		n := 0
		for o := range out {
			require.NoError(t, o.err, o.runID)
			require.Equal(t, winner, o.runID)
			require.Equal(t, "terraform 1.11.4", o.res.Tool)
			n++
		}
		require.Equal(t, 3, n)
		// Once the result is taken (its pod succeeded), the workspace is
		// free at once, even while the Job is not yet marked complete: the
		// next run gets a new Job.
		k.set("busy", deliver(t, cs, nil))
		_, err := d.runner.Run(t.Context(), request("busy", "b6"))
		require.NoError(t, err)
		require.Len(t, jobsOf(t, cs, ns, "busy"), 2)
	})

	t.Run("cancel deletes the job and its pod", func(t *testing.T) {
		running := make(chan string, 1)
		podEnded := make(chan struct{})
		k.set("cancel", func(ctx context.Context, pod *corev1.Pod) (int, string) {
			running <- pod.Name
			<-ctx.Done() // the pod is deleted
			close(podEnded)
			return 137, ""
		})
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(ctx, request("cancel", "run-cancel"))
			errc <- err
		}()
		pod := <-running
		name := JobName("cancel", "run-cancel")
		cancel()
		err := <-errc
		require.ErrorIs(t, err, context.Canceled)
		// Run returns after the delete was issued: the Job is gone (or
		// going), and the garbage collector removes its pod and Secret
		// because the deletion propagates in the background.
		j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err) || (err == nil && j.DeletionTimestamp != nil), "job still there: %v", err)
		eventually(t, "pod deleted", func() bool {
			_, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		<-podEnded
		eventually(t, "secret collected", func() bool {
			_, err := cs.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("adopt after restart", func(t *testing.T) {
		release := make(chan struct{})
		k.set("adopt", deliver(t, cs, release))
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("adopt", "run-adopt"))
			errc <- err
		}()
		eventually(t, "job created", func() bool { return len(jobsOf(t, cs, ns, "adopt")) == 1 })

		// The daemon stops (a crash, a new leader): its Run ends, the Job
		// stays, and its pod finishes meanwhile, retrying its delivery
		// against a daemon that does not know the run yet (404).
		d.restart()
		require.ErrorIs(t, <-errc, ErrStopped)
		require.Len(t, jobsOf(t, cs, ns, "adopt"), 1)
		close(release)
		time.Sleep(300 * time.Millisecond)

		// The run lifecycle adopts it through Jobs (run.Jobs).
		adopted, err := d.runner.Jobs(nil).Adopt(t.Context())
		require.NoError(t, err)
		var a *runner.Adopted
		for i := range adopted {
			if adopted[i].Workspace == "adopt" {
				a = &adopted[i]
			}
		}
		require.NotNil(t, a, "adopted: %v", adopted)
		require.Equal(t, "run-adopt", a.RunID)
		require.Equal(t, JobName("adopt", "run-adopt"), a.Job)
		require.False(t, a.Remediation)
		// Its Runner (the run lifecycle's view of it) awaits the Job.
		res, err := a.Runner.Run(t.Context(), request("adopt", "run-adopt"))
		require.NoError(t, err)
		require.Equal(t, "terraform 1.11.4", res.Tool)
		require.Len(t, jobsOf(t, cs, ns, "adopt"), 1, "adopted, not duplicated")
	})

	t.Run("run adopts an orphaned job", func(t *testing.T) {
		release := make(chan struct{})
		k.set("orphan", deliver(t, cs, release))
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("orphan", "run-first"))
			errc <- err
		}()
		eventually(t, "job created", func() bool { return len(jobsOf(t, cs, ns, "orphan")) == 1 })
		d.restart()
		require.ErrorIs(t, <-errc, ErrStopped)
		// The restarted daemon re-runs the interrupted run under a new id
		// without calling Adopt: the running Job is awaited, not doubled.
		done := make(chan error, 1)
		go func() {
			res, err := d.runner.Run(t.Context(), request("orphan", "run-second"))
			if err == nil && res.Tool != "terraform 1.11.4" {
				err = fmt.Errorf("unexpected result %+v", res)
			}
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		close(release)
		require.NoError(t, <-done)
		require.Len(t, jobsOf(t, cs, ns, "orphan"), 1)
	})

	t.Run("replayed and forged tokens", func(t *testing.T) {
		var spec *remote.Spec
		var token string
		k.set("replay", func(ctx context.Context, pod *corev1.Pod) (int, string) {
			s, tok, err := readRun(ctx, cs, pod)
			if err != nil {
				return 1, err.Error()
			}
			forged, _ := remote.NewToken()
			ctx403, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			var se *remote.StatusError
			if err := remote.Post(ctx403, s.CallbackURL, forged, canned(s.RunID)); !errors.As(err, &se) || se.Code != http.StatusForbidden {
				t.Errorf("forged token: %v", err)
			}
			spec, token = s, tok
			if err := remote.Post(ctx, s.CallbackURL, tok, canned(s.RunID)); err != nil {
				return 1, err.Error()
			}
			return 0, ""
		})
		_, err := d.runner.Run(t.Context(), request("replay", "run-replay"))
		require.NoError(t, err)
		post := func(url, tok string, res remote.Result) (int, string) {
			b, err := json.Marshal(res)
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(b))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		// The same result again (a retry): idempotent. Another one with
		// the token: a conflict. A forged token and an unknown run: one
		// answer, which tells nothing about which runs exist.
		code, _ := post(spec.CallbackURL, token, canned(spec.RunID))
		require.Equal(t, http.StatusNoContent, code)
		other := canned(spec.RunID)
		other.Result.Plan.Drift = nil
		code, _ = post(spec.CallbackURL, token, other)
		require.Equal(t, http.StatusConflict, code)
		forgedCode, forgedBody := post(spec.CallbackURL, "forged", canned(spec.RunID))
		require.Equal(t, http.StatusForbidden, forgedCode)
		unknownURL := strings.Replace(spec.CallbackURL, "run-replay", "no-such-run", 1)
		unknownCode, unknownBody := post(unknownURL, token, canned("no-such-run"))
		require.Equal(t, forgedCode, unknownCode)
		require.Equal(t, forgedBody, unknownBody)
	})

	t.Run("a forged result posted first is not the verdict", func(t *testing.T) {
		// The token leaked (a module of an older pod shape could read it):
		// a "clean" result is posted while the plan runs. The real code
		// of the pod then posts the real result, gets 409, and fails the
		// pod; the daemon reports the conflict. The run errors.
		local := runnerFunc(func(ctx context.Context, req terraform.Request) (runner.Result, error) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{
				Name: "run", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: JobName(req.Workspace, req.RunID)}}}}}}
			s, tok, err := readRun(ctx, cs, pod)
			if err != nil {
				return runner.Result{}, err
			}
			clean := canned(req.RunID)
			clean.Result.Plan.Drift, clean.Result.ExitCode = nil, 0
			if err := remote.Post(ctx, s.CallbackURL, tok, clean); err != nil {
				t.Errorf("forged post: %v", err)
			}
			return canned(req.RunID).Unpack()
		})
		exits := make(chan map[string]kubetest.ContainerExit, 1)
		play := realPod(t, cs, local, nil)
		k.setContainers("forged", func(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
			out := play(ctx, pod)
			exits <- out
			return out
		})
		res, err := d.runner.Run(t.Context(), request("forged", "run-forged"))
		var re *terraform.Error
		require.ErrorAs(t, err, &re, "the forged result was taken: %+v", res)
		require.ErrorIs(t, err, remote.ErrConflictingResults)
		require.Equal(t, "result: conflicting results posted: possible forgery", err.Error())
		e := <-exits
		require.Equal(t, 0, e[ContainerName].ExitCode, e[ContainerName].Message)
		require.Equal(t, 1, e[ReporterContainerName].ExitCode)
		require.Contains(t, e[ReporterContainerName].Message, "suspicious")
		require.Contains(t, e[ReporterContainerName].Message, "409 Conflict on attempt 1")
	})

	t.Run("a result posted before the pod failed is not the verdict", func(t *testing.T) {
		// Someone with the token posts, and the runner is killed before it
		// hands anything over: no conflicting post comes, but the pod
		// fails, so the held result is dropped.
		k.set("killed", func(ctx context.Context, pod *corev1.Pod) (int, string) {
			s, tok, err := readRun(ctx, cs, pod)
			if err != nil {
				return 1, err.Error()
			}
			if err := remote.Post(ctx, s.CallbackURL, tok, canned(s.RunID)); err != nil {
				return 1, err.Error()
			}
			return 1, "reporter: run run-killed: the runner closed the handoff without a result (did the runner container fail?)"
		})
		_, err := d.runner.Run(t.Context(), request("killed", "run-killed"))
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Equal(t, "job", re.Phase)
		require.Contains(t, re.Reason, "after a result was posted for the run; it is not taken")
	})
}
