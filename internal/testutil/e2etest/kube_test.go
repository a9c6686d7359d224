package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
	"github.com/driftwatch/driftwatch/internal/runner/remote"
	"github.com/driftwatch/driftwatch/internal/testutil/kubetest"
)

// TestKubeDaemon runs the real daemon in kubernetes mode against a real
// control plane: each run is a Job, and the test plays the kubelet by
// running the pod's two containers (the real `driftwatch runner`, which
// runs Terraform, and `driftwatch runner report`, which alone holds the
// token) as local processes, each with only its own mounts materialised.
func TestKubeDaemon(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	cs, ctx, ns := k.cs, context.Background(), k.ns
	listen := freePort(t)
	k.e.workspace(t, "broken", map[string]string{"main.tf": `resource "terraform_data" "x" { input = 1 }`})
	k.extraWorkspaces = "  - name: broken\n    source: { path: ./broken }"
	cfg := k.config(t, "driftwatch.yaml", listen, "data", "")
	pods := k.pods
	began := time.Now()
	d := startDaemon(t, cfg, listen)
	d.eventually("drift recorded through a Job", 3*time.Minute, func() bool {
		return d.workspaces()["drifted"].Status == "drift"
	})
	t.Logf("daemon start to drift recorded through a Job: %s", time.Since(began).Round(time.Millisecond))
	ws := d.workspaces()["drifted"]
	require.Equal(t, 1, ws.Counts.Drift)
	var run struct {
		Status   string `json:"status"`
		Tool     string `json:"tool"`
		Findings []struct {
			Kind, Address, Type string
			Attributes          []string
		} `json:"findings"`
	}
	d.getJSON("/api/v1/runs/"+ws.LastRunID, &run)
	require.Equal(t, "drift", run.Status)
	var found bool
	for _, f := range run.Findings {
		if f.Address == "dwtest_file.a" && f.Kind == "drift" {
			found = true
			require.Contains(t, f.Attributes, "content")
		}
	}
	require.True(t, found, "finding dwtest_file.a (drift): %+v", run.Findings)
	select {
	case <-pods:
	default:
		t.Fatal("no run pod was played")
	}

	// A pod that exits non-zero fails its Job; the run is errored with the
	// pod's story.
	d.eventually("broken recorded as errored", time.Minute, func() bool {
		return d.workspaces()["broken"].Status == "errored"
	})
	t.Logf("failed pod reported as: %s", d.workspaces()["broken"].Error)
	require.Contains(t, d.workspaces()["broken"].Error, "boom: provider crashed")
	require.Contains(t, d.workspaces()["broken"].Error, "3")

	// The Job: labelled, sandboxed, Complete.
	var job batchv1.Job
	d.eventually("job complete", time.Minute, func() bool {
		jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{
			LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy + "," + kube.LabelWorkspace + "=drifted",
		})
		require.NoError(t, err)
		require.Len(t, jobs.Items, 1)
		job = jobs.Items[0]
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	require.Equal(t, ws.LastRunID, job.Annotations[kube.AnnotationRunID])
	require.Equal(t, "drifted", job.Labels[kube.LabelWorkspace])
	require.NotEmpty(t, job.Labels[kube.LabelRunID])
	pod := job.Spec.Template.Spec
	require.False(t, *pod.AutomountServiceAccountToken)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.True(t, *pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem)
	// Terraform's container has no token and is another user than the
	// reporter; the played kubelet checked that its process had no path
	// to the token file.
	requireTokenOnlyInReporter(t, pod)
	require.NotZero(t, k.checked.Load(), "no pod's mounts were checked")

	// A manual trigger needs the API token, which this config has not: the
	// run pods' endpoint is outside the API's auth, on its own listener
	// (callback_listen), and the main server does not serve it. A forged
	// result is refused.
	require.Equal(t, http.StatusNotFound, d.post(remote.ResultPath(ws.LastRunID), "forged"))
	req, err := http.NewRequest(http.MethodPost, "http://"+k.callback+remote.ResultPath(ws.LastRunID), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer forged")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, err = http.Get("http://" + k.callback + "/api/v1/workspaces")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the callback listener serves the callback only")

	code := d.stop(syscall.SIGTERM, 30*time.Second)
	require.Equal(t, 0, code, d.logs.String())
}

// kubeEnv is a control plane with a played kubelet and a drifted workspace.
type kubeEnv struct {
	e       *tfEnv
	cluster *kubetest.Cluster
	cs      kubernetes.Interface
	ns      string
	pods    chan string
	// extraWorkspaces is appended to the config's workspaces list.
	extraWorkspaces string
	// tokenFile, if set (withAPIToken), is the config's server.token_file.
	tokenFile string
	// callback is the last config's runner.kubernetes.callback_listen
	// (a free port of its own; callback_url names it).
	callback string
	// gate, if set before a pod starts, holds the pod until it is closed.
	gate atomic.Pointer[chan struct{}]
	// checked counts the played pods whose containers' mounts were checked
	// (checkTokenOnlyInReporter) before they started.
	checked atomic.Int32
}

func startKubeEnv(t *testing.T) *kubeEnv {
	bins, cli := tftest.Tools(t)
	cluster := kubetest.Start(t)
	cs, err := cluster.Clientset()
	require.NoError(t, err)
	k := &kubeEnv{cluster: cluster, cs: cs, ns: "driftwatch-runs", pods: make(chan string, 64)}
	require.NoError(t, cluster.CreateNamespace(context.Background(), k.ns, map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}))
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	k.e = e
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))
	drifted := e.workspace(t, "drifted", map[string]string{"main.tf": providers + `
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`})
	e.apply(t, drifted)
	require.NoError(t, os.WriteFile(filepath.Join(e.root, "out", "a.txt"), []byte("hand edit"), 0o644))
	cluster.PlayKubeletContainers(t, k.ns, func(ctx context.Context, pod *corev1.Pod) map[string]kubetest.ContainerExit {
		k.pods <- pod.Name
		if pod.Labels[kube.LabelWorkspace] == "broken" {
			// A pod whose runner dies: the reporter gets no result, the Job
			// fails, and the daemon says why (the runner's story first).
			return map[string]kubetest.ContainerExit{
				kube.ContainerName:         {ExitCode: 3, Message: "boom: provider crashed"},
				kube.ReporterContainerName: {ExitCode: 1, Message: "reporter: run x: the runner closed the handoff without a result (did the runner container fail?)"},
			}
		}
		if g := k.gate.Load(); g != nil {
			select {
			case <-*g:
			case <-ctx.Done():
				return killedPod()
			}
		}
		return k.playPod(ctx, t, pod)
	})
	return k
}

// killedPod is how a pod deleted while held ends.
func killedPod() map[string]kubetest.ContainerExit {
	return map[string]kubetest.ContainerExit{
		kube.ContainerName:         {ExitCode: 137, Message: "killed"},
		kube.ReporterContainerName: {ExitCode: 137, Message: "killed"},
	}
}

// podExit sums up a played pod as one exit: the first container's that
// failed (the runner's before the reporter's), else 0.
func podExit(exits map[string]kubetest.ContainerExit) (int, string) {
	for _, name := range []string{kube.ContainerName, kube.ReporterContainerName} {
		if e := exits[name]; e.ExitCode != 0 {
			return e.ExitCode, name + ": " + e.Message
		}
	}
	return 0, ""
}

// withAPIToken makes the configs written after it require token for the
// API's mutating endpoints (cancel, kill switch).
func (k *kubeEnv) withAPIToken(t *testing.T, token string) {
	k.tokenFile = filepath.Join(k.e.root, "api-token")
	require.NoError(t, os.WriteFile(k.tokenFile, []byte(token), 0o600))
}

// config writes a kubernetes-mode config named file, with its store under
// dataDir and extra appended under runner:.
func (k *kubeEnv) config(t *testing.T, file, listen, dataDir, extraRunner string) string {
	e := k.e
	k.callback = freePort(t)
	server := fmt.Sprintf("listen: %q", listen)
	if k.tokenFile != "" {
		server += ", token_file: " + k.tokenFile
	}
	p := e.config(t, fmt.Sprintf(`
server: { %s }
store: { path: %s }
defaults:
  schedule: "@hourly"
workspaces:
  - name: drifted
    source: { path: ./drifted }
%s
runner:
  mode: kubernetes
  kubernetes:
    kubeconfig: %s
    namespace: %s
    image: driftwatch:e2e
    command: [%s]
    callback_url: http://%s
    callback_listen: %s
    cli_config_file: %s
    default_timeout: 5m
    startup_allowance: 1m
    ttl_after_finished: 1h
%s`, server, filepath.Join(e.root, dataDir, "driftwatch.db"), k.extraWorkspaces, k.cluster.Kubeconfig, k.ns, driftwatchBin, k.callback, k.callback, e.cliConfig, extraRunner))
	if file == "driftwatch.yaml" {
		return p
	}
	q := filepath.Join(e.root, file)
	require.NoError(t, os.Rename(p, q))
	return q
}

// playPod plays the pod's two containers as local processes
// (kubetest.Processes): the real driftwatch binary as the runner and as the
// reporter, each with only its own volume mounts materialised (the spec's
// in-pod paths mapped to them), talking over the handoff socket in the
// emptyDir they share. Before they start it checks that the runner
// container has no path to the token and the reporter has.
func (k *kubeEnv) playPod(ctx context.Context, t *testing.T, pod *corev1.Pod) map[string]kubetest.ContainerExit {
	cs, err := k.cluster.Clientset()
	if err != nil {
		return map[string]kubetest.ContainerExit{kube.ContainerName: {ExitCode: 1, Message: err.Error()}}
	}
	p := &kubetest.Processes{
		Client:  cs,
		Env:     []string{"PATH=" + os.Getenv("PATH")},
		Logf:    t.Logf,
		Rewrite: rewriteSpec,
		Check: func(pod *corev1.Pod, containers []*kubetest.Container) error {
			if err := checkTokenOnlyInReporter(ctx, cs, pod, containers); err != nil {
				t.Errorf("pod %s: %v", pod.Name, err)
				return err
			}
			k.checked.Add(1)
			return nil
		},
	}
	return p.Run(ctx, pod)
}

// rewriteSpec maps the in-pod paths of the run spec (volume "run") through
// the played container's mounts. The token file is only the reporter's;
// the CLI config is the host's own (as it would be the image's).
func rewriteSpec(c *kubetest.Container, volume, file string, data []byte) ([]byte, error) {
	if volume != "run" || file != "spec.json" {
		return data, nil
	}
	spec, err := remote.DecodeSpec(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	mapPath := func(p *string) {
		if host, ok := c.Path(*p); ok {
			*p = host
		}
	}
	mapPath(&spec.TokenFile)
	mapPath(&spec.WorkDir)
	mapPath(&spec.GitCacheDir)
	for name, p := range spec.SecretEnvFiles {
		mapPath(&p)
		spec.SecretEnvFiles[name] = p
	}
	if g := spec.Source.Git; g != nil {
		mapPath(&g.CredentialsFile)
	}
	return spec.Encode()
}

// checkTokenOnlyInReporter: the runner container (Terraform's) has no path
// to the run's token (none of its mounts holds it, and the token path is
// not among them), the reporter has.
func checkTokenOnlyInReporter(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, containers []*kubetest.Container) error {
	secret, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, pod.Labels[batchv1.JobNameLabel], metav1.GetOptions{})
	if err != nil {
		return err
	}
	token := string(secret.Data["token"])
	if token == "" {
		return fmt.Errorf("secret %s has no token", secret.Name)
	}
	for _, c := range containers {
		host, mounted := c.Path(kube.TokenPath)
		var holding []string
		for _, m := range c.Mounts {
			_ = filepath.WalkDir(m.HostPath, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
						holding = append(holding, m.Path+strings.TrimPrefix(p, m.HostPath))
					}
				}
				return nil
			})
		}
		if c.Name == kube.ReporterContainerName {
			if !mounted {
				return fmt.Errorf("the reporter cannot read the token at %s: not mounted", kube.TokenPath)
			}
			if b, err := os.ReadFile(host); err != nil {
				return fmt.Errorf("the reporter cannot read the token at %s: %w", kube.TokenPath, err)
			} else if string(b) != token {
				return fmt.Errorf("the reporter cannot read the token at %s: it holds something else", kube.TokenPath)
			}
			continue
		}
		if mounted || len(holding) > 0 {
			return fmt.Errorf("container %s can see the token (%s mounted: %v; files holding it: %v)", c.Name, kube.TokenPath, mounted, holding)
		}
		if strings.Contains(strings.Join(append(c.Argv, c.Env...), " "), kube.TokenDir) {
			return fmt.Errorf("container %s is told where the token is: %q %q", c.Name, c.Argv, c.Env)
		}
	}
	return nil
}

// requireTokenOnlyInReporter checks a run Job's pod spec: only the
// reporter mounts the token, and the runner runs as another user.
func requireTokenOnlyInReporter(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	require.Len(t, pod.Containers, 2)
	runnerC, reporterC := pod.Containers[0], pod.Containers[1]
	require.Equal(t, kube.ContainerName, runnerC.Name)
	require.Equal(t, kube.ReporterContainerName, reporterC.Name)
	for _, m := range runnerC.VolumeMounts {
		require.NotEqual(t, "token", m.Name, "the runner container mounts the token")
		require.NotEqual(t, kube.TokenDir, m.MountPath, "the runner container mounts the token")
	}
	require.Contains(t, reporterC.VolumeMounts, corev1.VolumeMount{Name: "token", MountPath: kube.TokenDir, ReadOnly: true})
	require.NotEqual(t, *runnerC.SecurityContext.RunAsUser, *reporterC.SecurityContext.RunAsUser)
	require.False(t, *pod.ShareProcessNamespace)
}

// TestKubeLeaderElection runs two daemons campaigning for one Lease: only
// the leader runs (the standby records nothing), and killing the leader
// (kill -9: no release) hands over to the standby within the lease duration.
func TestKubeLeaderElection(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	ctx := context.Background()
	le := `  leader_election:
    enabled: true
    lease_name: driftwatch-e2e
    lease_duration: 4s
    renew_deadline: 3s
    retry_period: 500ms
`
	listenA, listenB := freePort(t), freePort(t)
	// Both share one store, as replicas on one volume do: only the leader
	// takes its lock and schedules.
	const token = "dw-api-token-kube-le-5-0123456789abcdef0123456789"
	k.withAPIToken(t, token)
	a := startDaemon(t, k.config(t, "a.yaml", listenA, "data", le), listenA)
	a.eventually("a leads", 30*time.Second, func() bool { return strings.Contains(a.logs.String(), "leader election: leading") })
	b := startDaemonProbe(t, k.config(t, "b.yaml", listenB, "data", le), listenB, nil, "/healthz")
	a.eventually("drift recorded by the leader", 3*time.Minute, func() bool { return a.workspaces()["drifted"].Status == "drift" })
	b.eventually("b stands by", 30*time.Second, func() bool { return strings.Contains(b.logs.String(), "leader election: standby") })
	require.NotContains(t, b.logs.String(), "run started", "the standby runs nothing")
	require.NotContains(t, b.logs.String(), "leader election: leading")
	require.Equal(t, http.StatusServiceUnavailable, b.post("/api/v1/workspaces/drifted/runs", token), "nor queues anything")
	// The standby names the leader: the Lease holder, in its 503s and its
	// status.
	lease, err := k.cs.CoordinationV1().Leases(k.ns).Get(ctx, "driftwatch-e2e", metav1.GetOptions{})
	require.NoError(t, err)
	holder := ptrStr(lease.Spec.HolderIdentity)
	require.NotEmpty(t, holder)
	wantStandby := "unavailable: this replica is a standby; the leader is " + holder
	code, body := postJSON(t, b, "/api/v1/workspaces/drifted/runs", token)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Equal(t, wantStandby, body["error"])
	code, body = postJSON(t, b, "/api/v1/runs/"+a.runs("drifted")[0].ID+"/cancel", token)
	require.Equal(t, http.StatusServiceUnavailable, code, "a standby cancels nothing either: %v", body)
	require.Equal(t, wantStandby, body["error"])
	var status map[string]any
	b.getJSON("/api/v1/status", &status)
	require.Equal(t, holder, status["leader"])
	require.Equal(t, wantStandby, status["not_ready"])
	a.getJSON("/api/v1/status", &status)
	require.Equal(t, holder, status["leader"], "the leader names itself")
	// Only the leader is ready: a Service sends the API and run pods'
	// results to it.
	require.Equal(t, http.StatusOK, probeStatus(t, a, "/readyz"))
	require.Equal(t, http.StatusServiceUnavailable, probeStatus(t, b, "/readyz"))

	killed := time.Now()
	require.NoError(t, a.cmd.Process.Kill())
	<-a.exited
	b.eventually("b takes over and records drift", 2*time.Minute, func() bool {
		return strings.Contains(b.logs.String(), "run finished") && b.workspaces()["drifted"].Status == "drift"
	})
	require.Equal(t, http.StatusOK, probeStatus(t, b, "/readyz"), "the new leader is ready")
	t.Logf("leader killed to drift recorded by the new leader: %s", time.Since(killed).Round(time.Millisecond))
	runs := b.runs("drifted")
	require.Len(t, runs, 2, "the old leader's run and the new one's, in the shared store")
	jobs, err := k.cs.BatchV1().Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelWorkspace + "=drifted"})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 2, "one Job per leader's run")

	b.getJSON("/api/v1/status", &status)
	require.NotEqual(t, holder, status["leader"], "the new leader is b")
	require.NotEmpty(t, status["leader"])

	code = b.stop(syscall.SIGTERM, 30*time.Second)
	require.Equal(t, 0, code, b.logs.String())
	lease, err = k.cs.CoordinationV1().Leases(k.ns).Get(ctx, "driftwatch-e2e", metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, ptrStr(lease.Spec.HolderIdentity), "released on graceful shutdown")
}

// postJSON POSTs to path with the API token and returns the status code
// and the JSON body.
func postJSON(t *testing.T, d *daemonProc, path, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func probeStatus(t *testing.T, d *daemonProc, path string) int {
	t.Helper()
	resp, err := http.Get(d.base + path)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func ptrStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestKubeDaemonRestartAdopts stops the daemon gracefully while its Job's
// pod is still running: the Job is left running, and the next daemon adopts
// it (no second Job) and records the result the pod delivers on the run the
// Job was started for (same id, never marked interrupted).
func TestKubeDaemonRestartAdopts(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	ctx := context.Background()
	gate := make(chan struct{})
	k.gate.Store(&gate)
	const token = "dw-api-token-kube-adopt-7-0123456789abcdef0123456789"
	k.withAPIToken(t, token) // the run's log needs a read credential
	listen := freePort(t)
	cfg := k.config(t, "driftwatch.yaml", listen, "data", "")
	d := startDaemon(t, cfg, listen)
	var podName string
	select {
	case podName = <-k.pods:
	case <-time.After(time.Minute):
		t.Fatal("no run pod started")
	}
	var before []apiRun
	d.eventually("run recorded running", 30*time.Second, func() bool {
		before = d.runs("drifted")
		return len(before) == 1 && before[0].Status == "running"
	})
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
	jobs, err := k.cs.BatchV1().Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelWorkspace + "=drifted"})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1)
	require.Nil(t, jobs.Items[0].DeletionTimestamp, "a graceful stop leaves the Job for the next daemon")

	d2 := startDaemon(t, cfg, listen)
	d2.eventually("job adopted", 30*time.Second, func() bool { return strings.Contains(d2.logs.String(), "awaiting adopted job") })
	require.Equal(t, []apiRun{before[0]}, d2.runs("drifted"), "still running under its id, not interrupted")
	close(gate)
	d2.eventually("adopted result recorded", 2*time.Minute, func() bool { return d2.workspaces()["drifted"].Status == "drift" })
	runs := d2.runs("drifted")
	require.Len(t, runs, 1, "the adopted run finished, no other recorded: %+v", runs)
	require.Equal(t, before[0].ID, runs[0].ID, "the adopted Job's run keeps its id")
	require.Equal(t, "initial", runs[0].Trigger)
	require.Equal(t, "drift", runs[0].Status, "finished with the Job's verdict")
	require.Equal(t, before[0].ID, d2.workspaces()["drifted"].LastRunID)
	require.Contains(t, d2.logs.String(), `"msg":"run adopted","workspace":"drifted","run_id":"`+runs[0].ID+`"`)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d2.base+"/api/v1/runs/"+runs[0].ID+"/logs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	runLog, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(runLog))
	require.Contains(t, string(runLog), "== adopted: ", "its log says it was adopted")
	// The pod started after the adoption: its whole log came to this daemon.
	_, podLog, _ := strings.Cut(string(runLog), "== adopted: ")
	require.Contains(t, podLog, "== plan ==", "the adopted Job's log")
	require.Regexp(t, `(?m)^== changes ==\ndrift\s+update\s+dwtest_file\.a\b`, podLog)
	jobs, err = k.cs.BatchV1().Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelWorkspace + "=drifted"})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1, "adopted, not duplicated (pod %s)", podName)
	require.Equal(t, 0, d2.stop(syscall.SIGTERM, 30*time.Second), d2.logs.String())
}
