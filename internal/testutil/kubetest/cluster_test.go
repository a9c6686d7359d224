//go:build linux

package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestJobLifecycle runs Jobs through the real Job controller with the test
// playing the kubelet: exit 0 completes the Job, exit 3 under a
// podFailurePolicy fails it at once, and a Job past its deadline fails and
// has its running pod deleted.
func TestJobLifecycle(t *testing.T) {
	c := Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const ns = "runs"
	require.NoError(t, c.CreateNamespace(ctx, ns, map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}))

	var mu sync.Mutex
	killed := map[string]bool{} // job name -> its pod's run saw its context end
	c.PlayKubelet(t, ns, func(ctx context.Context, pod *corev1.Pod) (int, string) {
		job := pod.Labels[batchv1.JobNameLabel]
		switch job {
		case "ok":
			return 0, `{"result":"clean"}`
		case "fail":
			return 3, "plan failed"
		case "slow":
			<-ctx.Done() // runs until the Job controller deletes the pod
			mu.Lock()
			killed[job] = true
			mu.Unlock()
			return 137, ""
		}
		t.Errorf("unexpected pod %s", pod.Name)
		return 1, ""
	})

	for _, name := range []string{"ok", "fail", "slow"} {
		job := testJob(name)
		if name == "slow" {
			job.Spec.ActiveDeadlineSeconds = ptrTo[int64](2)
		}
		_, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err, name)
	}

	ok := waitJob(ctx, t, cs, ns, "ok")
	assert.Equal(t, batchv1.JobComplete, ok.Type)
	fail := waitJob(ctx, t, cs, ns, "fail")
	assert.Equal(t, batchv1.JobFailed, fail.Type)
	assert.Equal(t, batchv1.JobReasonPodFailurePolicy, fail.Reason)
	slow := waitJob(ctx, t, cs, ns, "slow")
	assert.Equal(t, batchv1.JobFailed, slow.Type)
	assert.Equal(t, batchv1.JobReasonDeadlineExceeded, slow.Reason)

	// The termination message is where a run's result can travel (there are
	// no pod logs without a kubelet).
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=ok"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	require.Len(t, pods.Items[0].Status.ContainerStatuses, 1)
	term := pods.Items[0].Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term)
	assert.JSONEq(t, `{"result":"clean"}`, term.Message)
	assert.Equal(t, corev1.PodSucceeded, pods.Items[0].Status.Phase)

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return killed["slow"]
	}, 30*time.Second, 50*time.Millisecond, "the deadline-exceeded pod's run was not stopped")

	// kubectl sees the same cluster.
	out, err := c.Kubectl("get", "jobs", "-n", ns, "-o", "name")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"job.batch/fail", "job.batch/ok", "job.batch/slow"}, strings.Fields(out))
}

// TestPodSecurityEnforced checks the API server enforces Pod Security: a
// pod that is not "restricted" is refused in a restricted namespace.
func TestPodSecurityEnforced(t *testing.T) {
	c := Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, c.CreateNamespace(ctx, "strict", map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "root"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	_, err = cs.CoreV1().Pods("strict").Create(ctx, pod, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "violates PodSecurity")
	pod.Spec = restrictedPodSpec()
	_, err = cs.CoreV1().Pods("strict").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

func testJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "driftwatch"}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptrTo[int32](0),
			TTLSecondsAfterFinished: ptrTo[int32](3600),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3},
				},
			}}},
			Template: corev1.PodTemplateSpec{Spec: restrictedPodSpec()},
		},
	}
}

// restrictedPodSpec is the sandbox driftwatch asks of its run pods; it
// passes the "restricted" Pod Security level.
func restrictedPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptrTo(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptrTo(true),
			RunAsUser:      ptrTo[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:    "plan",
			Image:   "driftwatch:test",
			Command: []string{"driftwatch", "runner"},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptrTo(false),
				ReadOnlyRootFilesystem:   ptrTo(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

// waitJob waits for the Job's Complete or Failed condition.
func waitJob(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) batchv1.JobCondition {
	t.Helper()
	var last *batchv1.Job
	for {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = j
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					return c
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s/%s did not finish: %v; last status %+v", ns, name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestConnect reads back the cluster a kubeconfig of Start's describes: the
// same server, token and CA, so a helper process's clients are the
// starter's; a kubeconfig without a token is refused.
func TestConnect(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{Server: "https://127.0.0.1:6443", token: "0123abcd", caPEM: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(c.Kubeconfig, c.kubeconfig(), 0o600))

	got, err := Connect(c.Kubeconfig)
	require.NoError(t, err)
	require.Equal(t, c.Kubeconfig, got.Kubeconfig)
	require.Equal(t, c.Server, got.Server)
	require.Equal(t, c.RESTConfig(), got.RESTConfig())

	noToken := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(noToken, []byte(strings.Replace(string(c.kubeconfig()), "token: 0123abcd", "username: someone", 1)), 0o600))
	_, err = Connect(noToken)
	require.ErrorContains(t, err, "no admin token")
	_, err = Connect(filepath.Join(dir, "missing"))
	require.Error(t, err)
}
