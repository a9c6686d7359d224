package e2etest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// TestKubeRemediation reverts real drift through a remediation Job: the
// daemon in kubernetes mode detects drift in a Job, auto-approves it,
// and instead of applying in its own process creates a Job marked as a
// remediation, in the same sandbox, whose pod (the real `driftwatch
// runner`, played by the test's kubelet) re-plans with the lock, checks
// the change-set hash, applies and verifies, and delivers the outcome with
// its one-time token. The apply run and the verification detection are
// recorded, the file is back to v1, the remediation is applied.
func TestKubeRemediation(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	cs, ctx, ns := k.cs, context.Background(), k.ns
	file := remedyWorkspace(t, k)
	const apiToken = "dw-api-token-kube-remediation-0123456789abcdef0123"
	k.withAPIToken(t, apiToken) // a run's log needs a read credential
	listen := freePort(t)
	d := startDaemon(t, k.config(t, "driftwatch.yaml", listen, "data", ""), listen)
	start := time.Now()

	r := d.waitRemediation("remedy", 4*time.Minute, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "applied", r.State, "%+v %s\n%s", r, r.Outcome, d.logs.String())
	t.Logf("drift to reverted through a remediation Job: %s", time.Since(start).Round(time.Millisecond))
	require.Equal(t, "v1", mustRead(t, file))
	require.NotEmpty(t, r.ApplyRunID)

	// The apply ran in a Job marked as a remediation, sandboxed like a
	// detection, and its pod was told exactly the approved change set.
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{
		LabelSelector: kube.WorkspaceSelector("remedy") + "," + kube.LabelKind + "=" + kube.KindRemediate,
	})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1)
	job := jobs.Items[0]
	require.Equal(t, kube.JobName("remedy", r.ApplyRunID), job.Name)
	require.Equal(t, r.ApplyRunID, job.Annotations[kube.AnnotationRunID])
	require.Equal(t, kube.ManagedBy, job.Labels[kube.LabelManagedBy])
	require.Equal(t, kube.KindRemediate, job.Spec.Template.Labels[kube.LabelKind])
	pod := job.Spec.Template.Spec
	require.False(t, *pod.AutomountServiceAccountToken)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	for _, c := range pod.Containers {
		require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem, c.Name)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation, c.Name)
		require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop, c.Name)
	}
	require.Equal(t, []string{driftwatchBin, "runner", "--spec", kube.SpecPath, "--socket", kube.HandoffSocket}, pod.Containers[0].Command)
	require.Equal(t, []string{driftwatchBin, "runner", "report", "--spec", kube.SpecPath, "--socket", kube.HandoffSocket}, pod.Containers[1].Command)
	// The apply runs without the token: its proceed check and its outcome
	// went through the reporter.
	requireTokenOnlyInReporter(t, pod)
	secret, err := cs.CoreV1().Secrets(ns).Get(ctx, job.Name, metav1.GetOptions{})
	require.NoError(t, err)
	spec, err := remote.DecodeSpec(bytes.NewReader(secret.Data["spec.json"]))
	require.NoError(t, err)
	require.NotNil(t, spec.Remediation)
	require.Equal(t, r.ChangeSetHash, spec.Remediation.ChangeSetHash)
	require.Equal(t, []string{"dwtest_file.a"}, spec.Remediation.Approved.Addresses())
	var played bool
	for len(k.pods) > 0 {
		if strings.HasPrefix(<-k.pods, job.Name+"-") {
			played = true
		}
	}
	require.True(t, played, "the remediation Job's pod ran")
	// Detection Jobs are told apart from it: the workspace's other Jobs
	// (the detection and the verification) are detections.
	all, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.WorkspaceSelector("remedy")})
	require.NoError(t, err)
	for _, j := range all.Items {
		if j.Name != job.Name {
			require.Equal(t, kube.KindDetect, j.Labels[kube.LabelKind], j.Name)
		}
	}

	// The apply is recorded as a run, and the verification detection (a
	// Job too) turns the workspace clean.
	d.eventually("remedy clean after the verification detection", 2*time.Minute, func() bool {
		return d.workspaces()["remedy"].Status == "clean"
	})
	var triggers []string
	for _, run := range d.runs("remedy") {
		triggers = append(triggers, run.Trigger+"/"+run.Status)
		if run.Trigger == "remediate" {
			require.Equal(t, r.ApplyRunID, run.ID)
		}
	}
	require.ElementsMatch(t, []string{"initial/drift", "remediate/applied", "verify/clean"}, triggers)
	// The apply run's log came from its Job's pod, as a detection's does:
	// the plan, the change set, the apply's progress, the outcome.
	_, applyLog := d.getAs("/api/v1/runs/"+r.ApplyRunID+"/logs", apiToken)
	for _, want := range []string{"== remediation " + r.ID + ": change set ", "== plan ==", "== changes ==",
		"apply    dwtest_file.a: updating", "apply    dwtest_file.a: updated after ", "== applied =="} {
		require.Contains(t, applyLog, want)
	}
	require.NotContains(t, applyLog, "hand edit")
	require.Equal(t, 1.0, d.metric(`driftwatch_remediations_total{result="applied"}`)) //nolint:testifylint // float-compare: a whole-number count, exact in float64

	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
}

// remedyWorkspace adds the drifted workspace "remedy" (remediation mode
// auto) to k's config and returns the file its drift is in.
func remedyWorkspace(t *testing.T, k *kubeEnv) string {
	e := k.e
	// The state lives outside the run's sandbox (remediation refuses
	// state in the throw-away copy); the played pod reaches it as a real
	// pod would reach a remote backend.
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "state"), 0o755))
	dir := e.workspace(t, "remedy", map[string]string{"main.tf": fmt.Sprintf(remediationWorkspace, "remedy", "")})
	e.apply(t, dir)
	file := filepath.Join(e.root, "out", "remedy.txt")
	require.NoError(t, os.WriteFile(file, []byte("hand edit"), 0o644))
	k.extraWorkspaces = "  - name: remedy\n    source: { path: ./remedy }\n" +
		"    backend_policy: { allow_local: true }\n    remediation: { mode: auto }"
	return file
}

// TestKubeRemediationRestart stops the daemon gracefully while its
// remediation Job's pod is applying: the Job is left alone (deleting it
// would stop the apply half way), the next daemon marks the remediation
// interrupted, awaits the Job, records the outcome the pod delivers on
// the remediation, and runs the verification detection as the adopted run.
func TestKubeRemediationRestart(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	file := remedyWorkspace(t, k)
	// A kubelet of its own namespace, which holds remediation pods (and
	// only those) until apply is closed.
	k.ns = "driftwatch-remediation"
	cs, ctx, ns := k.cs, context.Background(), k.ns
	require.NoError(t, k.cluster.CreateNamespace(ctx, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	apply := make(chan struct{})
	applying := make(chan string, 1)
	k.cluster.PlayKubeletContainers(t, ns, func(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
		if pod.Labels[kube.LabelKind] == kube.KindRemediate {
			select {
			case applying <- pod.Name:
			default:
				t.Errorf("a second remediation pod: %s", pod.Name)
			}
			select {
			case <-apply:
			case <-ctx.Done():
				return killedPod()
			}
		}
		return k.playPod(ctx, t, pod)
	})
	listen := freePort(t)
	cfg := k.config(t, "driftwatch.yaml", listen, "data", "")
	d := startDaemon(t, cfg, listen)
	r := d.waitRemediation("remedy", 2*time.Minute, "running", "applied", "failed", "refused")
	require.Equal(t, "running", r.State, "%+v %s", r, r.Outcome)
	job := kube.JobName("remedy", r.ApplyRunID)
	select {
	case pod := <-applying:
		require.True(t, strings.HasPrefix(pod, job+"-"), pod)
	case <-time.After(time.Minute):
		t.Fatal("the remediation pod did not start")
	}
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, j.DeletionTimestamp, "a graceful stop leaves the remediation Job applying")
	require.Equal(t, "hand edit", mustRead(t, file), "the apply is still held")

	d2 := startDaemon(t, cfg, listen)
	d2.eventually("remediation marked interrupted", 30*time.Second, func() bool {
		return d2.remediations("remedy")[0].State == "failed"
	})
	d2.eventually("remediation job awaited", 30*time.Second, func() bool {
		return strings.Contains(d2.logs.String(), "awaiting the remediation job a previous daemon left running")
	})
	close(apply)
	got := d2.waitRemediation("remedy", 2*time.Minute, "applied", "verification_failed", "refused")
	require.Equal(t, "applied", got.State, "%+v %s\n%s", got, got.Outcome, d2.logs.String())
	require.Equal(t, r.ID, got.ID, "the interrupted remediation gets the outcome")
	require.Equal(t, "v1", mustRead(t, file))
	d2.eventually("remedy clean after the verification detection", 2*time.Minute, func() bool {
		return d2.workspaces()["remedy"].Status == "clean"
	})
	var triggers []string
	for _, run := range d2.runs("remedy") {
		triggers = append(triggers, run.Trigger+"/"+run.Status)
		if run.Trigger == "remediate" {
			require.Equal(t, r.ApplyRunID, run.ID, "the apply's run keeps its id")
		}
	}
	require.ElementsMatch(t, []string{"initial/drift", "remediate/applied", "adopted/clean"}, triggers,
		"the apply's run keeps its id and record across the restart, finished with the adopted Job's outcome")
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{
		LabelSelector: kube.WorkspaceSelector("remedy") + "," + kube.LabelKind + "=" + kube.KindRemediate,
	})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1, "awaited, not re-created")
	require.Equal(t, 0, d2.stop(syscall.SIGTERM, 30*time.Second), d2.logs.String())
}

// TestKubeRemediationKillSwitch pauses remediation after the remediation
// Job was created, before its pod applies: the pod (the real `driftwatch
// runner`, held by the test's kubelet until the pause) plans, asks the
// daemon right before `terraform apply` whether it may proceed, is told
// the kill switch is on, and applies nothing. The apply run is recorded
// refused, the remediation is approved again (as when the switch stops a
// local apply), and on resume a new remediation Job applies it.
func TestKubeRemediationKillSwitch(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	file := remedyWorkspace(t, k)
	k.ns = "driftwatch-killswitch"
	cs, ctx, ns := k.cs, context.Background(), k.ns
	require.NoError(t, k.cluster.CreateNamespace(ctx, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	release := make(chan struct{})
	held := make(chan string, 1)
	type exit struct {
		pod  string
		code int
		msg  string
	}
	exits := make(chan exit, 16)
	k.cluster.PlayKubeletContainers(t, ns, func(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
		if pod.Labels[kube.LabelKind] == kube.KindRemediate {
			select {
			case held <- pod.Name: // the first one waits for the pause
				select {
				case <-release:
				case <-ctx.Done():
					return killedPod()
				}
			default:
			}
		}
		out := k.playPod(ctx, t, pod)
		code, msg := podExit(out)
		exits <- exit{pod.Name, code, msg}
		return out
	})
	listen := freePort(t)
	token := "dw-api-token-kube-killswitch-7-0123456789abcdef0123456789"
	k.withAPIToken(t, token)
	cfg := k.config(t, "driftwatch.yaml", listen, "data", "")
	d := startDaemon(t, cfg, listen)

	r := d.waitRemediation("remedy", 2*time.Minute, "running", "applied", "failed", "refused")
	require.Equal(t, "running", r.State, "%+v %s", r, r.Outcome)
	job := kube.JobName("remedy", r.ApplyRunID)
	select {
	case pod := <-held:
		require.True(t, strings.HasPrefix(pod, job+"-"), pod)
	case <-time.After(time.Minute):
		t.Fatal("the remediation pod did not start")
	}
	require.Equal(t, 200, d.post("/api/v1/remediation/pause", token))
	close(release)

	// The pod planned, asked, was refused, and delivered that outcome: it
	// exits 0 and its Job completes.
	var remExit exit
	d.eventually("the remediation pod exited", 3*time.Minute, func() bool {
		for {
			select {
			case e := <-exits:
				if strings.HasPrefix(e.pod, job+"-") {
					remExit = e
					return true
				}
			default:
				return false
			}
		}
	})
	require.Equal(t, 0, remExit.code, remExit.msg)
	var applyRun apiRun
	d.eventually("the apply run recorded", time.Minute, func() bool {
		for _, run := range d.runs("remedy") {
			if run.ID == r.ApplyRunID && run.Status != "running" {
				applyRun = run
				return true
			}
		}
		return false
	})
	require.Equal(t, apiRun{ID: r.ApplyRunID, Status: "refused", Trigger: "remediate", Error: "remediation is paused (global kill switch)"}, applyRun)
	require.Contains(t, d.logs.String(), "remediation apply held back")
	require.Equal(t, "hand edit", mustRead(t, file), "nothing applied")

	// Approved again, held while paused: no other remediation Job. The
	// apply's run is recorded just before its remediation's outcome.
	var got []apiRemediation
	d.eventually("the remediation's outcome recorded", 30*time.Second, func() bool {
		got = d.remediations("remedy")
		return len(got) == 1 && got[0].State != "running"
	})
	require.Len(t, got, 1)
	require.Equal(t, r.ID, got[0].ID)
	require.Equal(t, "approved", got[0].State, "%+v", got[0])
	require.Equal(t, "remediation is paused (global kill switch)", got[0].Reason)
	time.Sleep(3 * time.Second) // the remediation loop ticks every second
	remJobs := func() []string {
		jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{
			LabelSelector: kube.WorkspaceSelector("remedy") + "," + kube.LabelKind + "=" + kube.KindRemediate,
		})
		require.NoError(t, err)
		var names []string
		for _, j := range jobs.Items {
			names = append(names, j.Name)
		}
		return names
	}
	require.Equal(t, []string{job}, remJobs())
	require.Equal(t, "approved", d.remediations("remedy")[0].State)
	require.Equal(t, "hand edit", mustRead(t, file))

	// Resume: the same remediation applies, in a new Job.
	require.Equal(t, 200, d.post("/api/v1/remediation/resume", token))
	done := d.waitRemediation("remedy", 3*time.Minute, "applied", "failed", "verification_failed", "refused")
	require.Equal(t, "applied", done.State, "%+v %s\n%s", done, done.Outcome, d.logs.String())
	require.Equal(t, r.ID, done.ID)
	require.NotEqual(t, r.ApplyRunID, done.ApplyRunID)
	require.Equal(t, "v1", mustRead(t, file))
	require.ElementsMatch(t, []string{job, kube.JobName("remedy", done.ApplyRunID)}, remJobs())
	d.eventually("remedy clean after the verification detection", 2*time.Minute, func() bool {
		return d.workspaces()["remedy"].Status == "clean"
	})
	var triggers []string
	for _, run := range d.runs("remedy") {
		triggers = append(triggers, run.Trigger+"/"+run.Status)
	}
	require.ElementsMatch(t, []string{"initial/drift", "remediate/refused", "remediate/applied", "verify/clean"}, triggers)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
}
