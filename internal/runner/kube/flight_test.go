package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/terraform"
)

func podWith(name string, phase corev1.PodPhase, st corev1.ContainerState, conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{
			Phase:             phase,
			Conditions:        conds,
			ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: st}},
		},
	}
}

func TestNotePod(t *testing.T) {
	cases := []struct {
		name          string
		pod           *corev1.Pod
		wantFatal     string
		wantFailure   string
		wantSucceeded bool
	}{
		{
			name: "image pull back-off",
			pod: podWith("p1", corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: `Back-off pulling image "ghcr.io/x/driftwatch:nope"`}}),
			wantFatal: `pod p1: image pull failed (ImagePullBackOff): Back-off pulling image "ghcr.io/x/driftwatch:nope"`,
		},
		{
			name: "err image pull",
			pod: podWith("p1", corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ErrImagePull", Message: "manifest unknown"}}),
			wantFatal: "pod p1: image pull failed (ErrImagePull): manifest unknown",
		},
		{
			name: "still creating",
			pod: podWith("p1", corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ContainerCreating"}}),
		},
		{
			name: "oom",
			pod: podWith("p1", corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled"}}),
			wantFailure: "pod p1 OOMKilled (exit code 137): the run exceeded its memory limit of 2Gi",
		},
		{
			name: "exit 1 with the log's last line",
			pod: podWith("p1", corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: "starting\nrunner: run r1: deliver result: result refused: 410 Gone: run deadline passed\n"}}),
			wantFailure: "pod p1 failed: exit code 1: runner: run r1: deliver result: result refused: 410 Gone: run deadline passed",
		},
		{
			name: "evicted",
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Status: corev1.PodStatus{
				Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage."}},
			wantFailure: "pod p1 failed: Evicted: The node was low on resource: ephemeral-storage.",
		},
		{
			name: "disrupted pods are replaced, not failures",
			pod: podWith("p1", corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}},
				corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}),
		},
		{
			name:          "success",
			pod:           podWith("p1", corev1.PodSucceeded, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}),
			wantSucceeded: true,
		},
		{
			name: "the reporter failed: a 409",
			pod: twoContainers("p1", corev1.PodFailed,
				corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}},
				corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					Message: "{...}\nreporter: run r1: deliver result: suspicious: the daemon already holds a different result for this run"}}),
			wantFailure: "pod p1 (reporter container) failed: exit code 1: reporter: run r1: deliver result: suspicious: the daemon already holds a different result for this run",
		},
		{
			name: "both failed: the runner's story first",
			pod: twoContainers("p1", corev1.PodFailed,
				corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
				corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					Message: "reporter: run r1: the runner closed the handoff without a result"}}),
			wantFailure: "pod p1 OOMKilled (exit code 137): the run exceeded its memory limit of 2Gi",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &flight{memLimit: "2Gi"}
			f.notePod(tc.pod)
			require.Equal(t, tc.wantFatal, f.pod.fatal)
			require.Equal(t, tc.wantFailure, f.pod.failure)
			require.Equal(t, tc.wantSucceeded, f.pod.succeeded)
		})
	}
}

// twoContainers is a run pod with its runner and reporter in these states.
func twoContainers(name string, phase corev1.PodPhase, runnerState, reporterState corev1.ContainerState) *corev1.Pod {
	p := podWith(name, phase, runnerState)
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ReporterContainerName, State: reporterState})
	return p
}

func TestJobFailure(t *testing.T) {
	job := &batchv1.Job{Spec: batchv1.JobSpec{ActiveDeadlineSeconds: ptrTo[int64](125)}}
	t.Run("deadline", func(t *testing.T) {
		err := jobFailure(job, &batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonDeadlineExceeded,
			Message: "Job was active longer than specified deadline"}, podState{failure: "pod p failed: exit code 137"})
		require.EqualError(t, err, "job: run timed out: job deadline exceeded after 2m5s")
		require.ErrorIs(t, err, terraform.ErrTimeout)
	})
	t.Run("pod failure", func(t *testing.T) {
		err := jobFailure(job, &batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonPodFailurePolicy},
			podState{failure: "pod p OOMKilled (exit code 137): the run exceeded its memory limit of 2Gi"})
		require.EqualError(t, err, "job: pod p OOMKilled (exit code 137): the run exceeded its memory limit of 2Gi")
		var re *terraform.Error
		require.ErrorAs(t, err, &re)
		require.NotErrorIs(t, err, terraform.ErrTimeout)
	})
	t.Run("only the condition", func(t *testing.T) {
		err := jobFailure(job, &batchv1.JobCondition{Type: batchv1.JobFailed, Reason: batchv1.JobReasonBackoffLimitExceeded,
			Message: "Job has reached the specified backoff limit"}, podState{})
		require.EqualError(t, err, "job: job failed: BackoffLimitExceeded: Job has reached the specified backoff limit")
	})
}
