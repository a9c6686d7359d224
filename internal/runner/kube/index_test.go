package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// TestCacheIndexes looks up a Job's pods and a workspace's Jobs in the
// informers' indexes: only the managed objects of the runner's namespace
// with that Job name or workspace label (the workspace as its label value).
func TestCacheIndexes(t *testing.T) {
	managed := func(ns, name string, l map[string]string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelManagedBy: ManagedBy}}
		for k, v := range l {
			m.Labels[k] = v
		}
		return m
	}
	const ws = "prod/network" // not a label value as it is
	objs := []runtime.Object{
		&corev1.Pod{ObjectMeta: managed("runs", "a-1", map[string]string{batchv1.JobNameLabel: "a"})},
		&corev1.Pod{ObjectMeta: managed("runs", "a-2", map[string]string{batchv1.JobNameLabel: "a"})},
		&corev1.Pod{ObjectMeta: managed("runs", "b-1", map[string]string{batchv1.JobNameLabel: "b"})},
		&corev1.Pod{ObjectMeta: managed("other", "a-3", map[string]string{batchv1.JobNameLabel: "a"})},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "runs", Name: "a-4", Labels: map[string]string{batchv1.JobNameLabel: "a"}}},
		&batchv1.Job{ObjectMeta: managed("runs", "j1", map[string]string{LabelWorkspace: labelValue(ws)})},
		&batchv1.Job{ObjectMeta: managed("runs", "j2", map[string]string{LabelWorkspace: labelValue("staging")})},
		&batchv1.Job{ObjectMeta: managed("other", "j3", map[string]string{LabelWorkspace: labelValue(ws)})},
		&batchv1.Job{ObjectMeta: managed("runs", "j4", nil)},
	}
	r := fakeRunner(t, fake.NewClientset(objs...))
	require.NoError(t, r.waitSynced(t.Context()))

	var pods []string
	for _, p := range r.podsOf("a") {
		pods = append(pods, p.Name)
	}
	require.ElementsMatch(t, []string{"a-1", "a-2"}, pods)
	require.Empty(t, r.podsOf("c"))

	jobs, err := r.workspaceJobs(ws)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "j1", jobs[0].Name)
	jobs, err = r.workspaceJobs("dev")
	require.NoError(t, err)
	require.Empty(t, jobs)
}
