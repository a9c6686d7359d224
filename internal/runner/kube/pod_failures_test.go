//go:build linux

package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// runnerFunc adapts a function to runner.Runner.
type runnerFunc func(context.Context, terraform.Request) (runner.Result, error)

func (f runnerFunc) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	return f(ctx, req)
}

// TestRunnerPodFailures plays the kubelet by hand to produce what
// PlayKubelet does not: a pod stuck on its image, and an OOM kill.
func TestRunnerPodFailures(t *testing.T) {
	c := kubetest.Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	const ns = "manual"
	require.NoError(t, c.CreateNamespace(t.Context(), ns, nil))
	d := newDaemon(t, cs, ns)

	setStatus := func(t *testing.T, job string, mutate func(*corev1.Pod)) {
		t.Helper()
		var pod string
		eventually(t, "pod of "+job, func() bool {
			l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
			if err == nil && len(l.Items) > 0 {
				pod = l.Items[0].Name
			}
			return pod != ""
		})
		require.NoError(t, retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			p, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(p)
			_, err = cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
			return err
		}))
	}

	t.Run("image pull back-off", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("pull", "run-pull"))
			errc <- err
		}()
		job := JobName("pull", "run-pull")
		setStatus(t, job, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "driftwatch:test",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "ImagePullBackOff", Message: `Back-off pulling image "driftwatch:test"`}}}}
		})
		err := <-errc
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.Regexp(t, `^pod driftwatch-pull-[0-9a-f]{10}-\w+: image pull failed \(ImagePullBackOff\): Back-off pulling image "driftwatch:test"$`, re.Reason)
		// The Job would only fail at its deadline: it is deleted now.
		_, err = cs.BatchV1().Jobs(ns).Get(t.Context(), job, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "job not deleted: %v", err)
	})

	t.Run("oom killed", func(t *testing.T) {
		errc := make(chan error, 1)
		go func() {
			_, err := d.runner.Run(t.Context(), request("oom", "run-oom"))
			errc <- err
		}()
		now := metav1.Now()
		setStatus(t, JobName("oom", "run-oom"), func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.StartTime = &now
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "driftwatch:test",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: now, FinishedAt: now}}}}
		})
		err := <-errc
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		// The real Job controller failed the Job through the
		// podFailurePolicy; the reason comes from the pod.
		require.Regexp(t, `^pod driftwatch-oom-[0-9a-f]{10}-\w+ OOMKilled \(exit code 137\): the run exceeded its memory limit of 2Gi$`, re.Reason)
		j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), JobName("oom", "run-oom"), metav1.GetOptions{})
		require.NoError(t, err)
		done, cond := jobFinished(j)
		require.True(t, done)
		require.Equal(t, batchv1.JobReasonPodFailurePolicy, cond.Reason)
	})
}
