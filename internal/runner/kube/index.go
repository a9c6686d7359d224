package kube

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// The informers' caches are indexed by what a run looks up in them: its
// Job's pods (on every event of the Job or a pod of it) and its
// workspace's Jobs (as it starts). A label selector walks every cached
// object of the namespace instead, and finished Jobs and their pods stay
// for ttl_after_finished: at 10,000 checks an hour and the default of 1h,
// some 10,000 of each for every look-up.
const (
	// indexJobName indexes pods by their Job's name (batchv1.JobNameLabel).
	indexJobName = "driftwatch.io/job-name"
	// indexWorkspace indexes Jobs by their LabelWorkspace value.
	indexWorkspace = "driftwatch.io/workspace"
)

// labelIndex indexes objects by the value of label; objects without it are
// not indexed.
func labelIndex(label string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil
		}
		if v, ok := m.GetLabels()[label]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
}

// podsOf is the cached pods of Job job.
func (r *Runner) podsOf(job string) []*corev1.Pod {
	objs, _ := r.podIndex.ByIndex(indexJobName, job) // Watch adds the index
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// workspaceJobs is the cached Jobs of a workspace's runs.
func (r *Runner) workspaceJobs(workspace string) ([]batchv1.Job, error) {
	objs, err := r.jobIndex.ByIndex(indexWorkspace, labelValue(workspace))
	if err != nil {
		return nil, err
	}
	jobs := make([]batchv1.Job, 0, len(objs))
	for _, o := range objs {
		if j, ok := o.(*batchv1.Job); ok {
			jobs = append(jobs, *j)
		}
	}
	return jobs, nil
}
