package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/policy"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
)

// testApplier is a workspace's remediation settings as the app builds them.
func testApplier() (*engine.Applier, engine.ChangeSet) {
	a := &engine.Applier{
		Rules: policy.Rules{
			Forbidden: []policy.Glob{policy.MustCompileGlob("kubernetes_*")},
			Ignore:    []policy.IgnoreRule{{Address: policy.MustCompileGlob("aws_instance.*"), Attributes: []policy.Glob{policy.MustCompileGlob("tags.*")}}},
		},
		Envelope:    engine.Envelope{AllowActions: []string{"update", "create"}, MaxResources: 3},
		LockTimeout: 30 * time.Second,
	}
	cs := engine.ChangeSet{Entries: []engine.Entry{{Address: "aws_s3_bucket.logs", Action: "update", Attributes: []string{"tags.owner"}}}}
	return a, cs.Normalize()
}

// TestBuildRemediationJob: a remediation Job is a run Job like any other
// (same sandbox, deadline, lifecycle), marked by its kind, and its spec
// carries the approved change set, rules, envelope and lock timeout.
func TestBuildRemediationJob(t *testing.T) {
	cfg := testConfig().withDefaults()
	detect, err := prepare(cfg, testRequest(), testNow)
	require.NoError(t, err)
	p := detect
	a, approved := testApplier()
	p.remediate(cfg, remote.RemediationOf(a, approved))
	require.Equal(t, "http://driftwatch.driftwatch.svc:8080/internal/v1/runs/9f8e7d6c5b4a3921/proceed", p.spec.ProceedURL)
	job := buildJob(cfg, p, testHash())
	plain := buildJob(cfg, detect, testHash())

	require.Equal(t, KindRemediate, job.Labels[LabelKind])
	require.Equal(t, KindRemediate, job.Spec.Template.Labels[LabelKind], "its pod is marked too")
	require.Equal(t, KindRemediate, jobKind(job))
	require.Equal(t, KindDetect, jobKind(plain))
	// Apart from the kind, the same Job: the same sandbox, deadline and
	// failure policy as a detection.
	job.Labels[LabelKind], job.Spec.Template.Labels[LabelKind] = KindDetect, KindDetect
	if d := cmp.Diff(plain, job); d != "" {
		t.Fatalf("remediation job differs from a detection job beyond its kind (-detect +remediate):\n%s", d)
	}

	job.Labels[LabelKind] = KindRemediate
	job.UID = "0b7c3a52-1111-2222-3333-444455556666"
	sec, err := buildSecret(job, p.spec, "test-token")
	require.NoError(t, err)
	require.Equal(t, KindRemediate, sec.Labels[LabelKind])
	view := sec.DeepCopy()
	view.StringData = map[string]string{"spec.json": string(view.Data["spec.json"])}
	view.Data = nil
	golden(t, "secret-remediation.golden.json", view)
	spec, err := remote.DecodeSpec(strings.NewReader(string(sec.Data["spec.json"])))
	require.NoError(t, err)
	globs := cmp.Comparer(func(a, b policy.Glob) bool { return a.String() == b.String() })
	if d := cmp.Diff(p.spec, *spec, globs); d != "" {
		t.Fatalf("spec in the secret (-want +got):\n%s", d)
	}
	require.Equal(t, approved.Hash(), spec.Remediation.ChangeSetHash)
}

// A Job without the kind label (an older build's) is a detection.
func TestJobKindDefault(t *testing.T) {
	require.Equal(t, KindDetect, jobKind(&batchv1.Job{}))
	require.Equal(t, KindDetect, jobKind(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelKind: "other"}}}))
}

// TestActiveJobsOrder: the Job to await for a workspace is its remediation
// Job if it has one (a restarted daemon may still see the detection that
// preceded it as active while its pod exits), else the oldest.
func TestActiveJobsOrder(t *testing.T) {
	job := func(name, kind string, age time.Duration, finished bool) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{
			Name: name, CreationTimestamp: metav1.NewTime(testNow.Add(-age)),
			Labels:      map[string]string{LabelKind: kind},
			Annotations: map[string]string{AnnotationWorkspace: "ws"},
		}}
		if finished {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}
		return j
	}
	names := func(js []*batchv1.Job) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.Name)
		}
		return out
	}
	none := func(string) bool { return false }
	items := []batchv1.Job{
		job("detect-old", KindDetect, 3*time.Minute, false),
		job("apply", KindRemediate, time.Minute, false),
		job("detect-new", KindDetect, 2*time.Minute, false),
		job("apply-done", KindRemediate, 5*time.Minute, true),
	}
	require.Equal(t, []string{"apply", "detect-old", "detect-new"}, names(activeJobs(items, "ws", none)))
	consumed := func(name string) bool { return name == "detect-old" }
	require.Equal(t, []string{"detect-new"}, names(activeJobs(items[2:], "ws", consumed)))
	require.Empty(t, activeJobs(items, "other", none))
}
