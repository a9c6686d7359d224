//go:build linux

package kubetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
)

// TestDockerChart: `helm install` of the chart, and its Deployment's pod
// runs the daemon in a container (from the chart's rendered args, config
// and volumes, in-cluster credentials from its projected token); it
// becomes ready as the Lease holder, schedules a workspace and creates a
// Job whose pod runs Terraform in the image, finds the real drift and
// posts the result to the daemon's callback; the run is recorded (the
// daemon's API) and its incident reaches a Slack stand-in (the webhook URL
// read from a Secret the chart mounts). The chart's probes run: the pod is
// Ready as the leader. Then: the daemon's container killed (SIGKILL), the
// kubelet restarts it, it stays a live but unready standby until the dead
// holder's Lease expires, then leads with its history intact; `helm
// upgrade` with a config change changes the pod template's checksum, the
// old pod stops on SIGTERM in well under its grace and the new one runs
// the new config.
//
// The test control plane runs no Deployment or ReplicaSet controller and
// no PersistentVolume binder: the test plays the Deployment controller by
// creating one pod from the Deployment's template, and installs with
// persistence.enabled=false (an emptyDir). There is no cluster network or
// DNS: every container shares the host's network, so the daemon listens on
// a free port of the host, its callback on another, and run pods call it
// back at 127.0.0.1 (the chart's callback_url names the Service, which
// only cluster DNS resolves). The image is driftwatch's plus the offline provider mirror
// and the workspace (runImage): the runner's configuration gives run pods
// no volume to mount a mirror from.
func TestDockerChart(t *testing.T) {
	env := Docker(t)
	image := runImage(t, env)
	c := Start(t)
	cs, err := c.Clientset()
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, c.CreateNamespace(ctx, chartNamespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}))
	k := c.PlayKubeletDocker(t, chartNamespace, env, DockerOptions{})

	ports, err := freePorts(2)
	require.NoError(t, err)
	port, callbackPort := strconv.Itoa(ports[0]), strconv.Itoa(ports[1])

	// A Slack stand-in on 127.0.0.1: the incoming webhook's URL is a
	// Secret (secrets.slack), mounted 0440 for the daemon's fsGroup.
	slackMsgs := make(chan string, 16)
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case slackMsgs <- r.URL.Path + " " + string(b):
		default:
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(slack.Close)
	_, err = cs.CoreV1().Secrets(chartNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "driftwatch-slack"},
		Data:       map[string][]byte{"webhook-url": []byte(slack.URL + "/services/T0/B0/secret")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	repo, tag, _ := strings.Cut(image, ":")
	writeValues := func(extraWorkspaces string) string {
		values := filepath.Join(t.TempDir(), "values.yaml")
		require.NoError(t, os.WriteFile(values, []byte(fmt.Sprintf(`
image: {repository: %s, tag: %q, pullPolicy: Never}
persistence: {enabled: false}
leaderElection: {enabled: true}
logFormat: text
secrets: {slack: driftwatch-slack}
config:
  notifiers:
    - name: slack
      type: slack
      slack:
        mode: webhook
        webhook_url_file: /var/run/secrets/driftwatch/slack/webhook-url
  alerts:
    default_notifiers: [slack]
  allow_sub_minute_schedules: true
  server:
    listen: 0.0.0.0:%s
  workspaces:
    - name: network
      source: {path: %s}
      schedule: "@every 15s"
%s
  runner:
    kubernetes:
      callback_url: http://127.0.0.1:%s
      callback_listen: 0.0.0.0:%s
      cli_config_file: %s
      startup_allowance: 1m
      default_timeout: 3m
`, repo, tag, port, runImageWS, extraWorkspaces, callbackPort, callbackPort, runImageCLIRC)), 0o644))
		return values
	}
	out, err := helm(t, "install", chartRelease, chartDir(t), "--namespace", chartNamespace,
		"--kubeconfig", c.Kubeconfig, "-f", writeValues(""))
	require.NoError(t, err, out)

	// The Deployment controller's part: one pod from the template.
	deployPod := func(name string) *corev1.Pod {
		dep, err := cs.AppsV1().Deployments(chartNamespace).Get(ctx, chartRelease, metav1.GetOptions{})
		require.NoError(t, err)
		tpl := dep.Spec.Template
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tpl.Labels, Annotations: tpl.Annotations},
			Spec:       tpl.Spec,
		}
		_, err = cs.CoreV1().Pods(chartNamespace).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		return pod
	}
	pod := deployPod(chartRelease + "-kubetest")

	base := "http://127.0.0.1:" + port
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	began := time.Now()
	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s", limit, what)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("%s after %s", what, time.Since(began).Round(time.Millisecond))
	}
	// The pod's readiness, as the chart's readiness probe (/readyz on
	// the "http" port) reports it, and its restart count.
	podReady := func(name string) (ready bool, restarts int32) {
		p, err := cs.CoreV1().Pods(chartNamespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		return ready, restarts
	}
	waitFor("the daemon ready", 90*time.Second, func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	waitFor("the pod Ready (readiness probe)", 30*time.Second, func() bool { r, _ := podReady(pod.Name); return r })
	lease, err := cs.CoordinationV1().Leases(chartNamespace).Get(ctx, chartRelease+"-leader", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, lease.Spec.HolderIdentity)
	// The daemon's identity: its pod's name (DRIFTWATCH_POD_NAME, from
	// the downward API) and a random suffix.
	assert.True(t, strings.HasPrefix(*lease.Spec.HolderIdentity, pod.Name+"_"), "lease holder %q", *lease.Spec.HolderIdentity)

	var jobs *batchv1.JobList
	waitFor("a run Job", 90*time.Second, func() bool {
		jobs, err = cs.BatchV1().Jobs(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: kube.WorkspaceSelector("network")})
		require.NoError(t, err)
		return len(jobs.Items) > 0
	})
	type run struct {
		ID, Status, Error, Tool string
		Counts                  map[string]int
	}
	var runs struct{ Runs []run }
	waitFor("a run recorded", 4*time.Minute, func() bool {
		code, body := get("/api/v1/workspaces/network/runs")
		if code != http.StatusOK {
			return false
		}
		require.NoError(t, json.Unmarshal([]byte(body), &runs), body)
		return len(runs.Runs) > 0 && runs.Runs[len(runs.Runs)-1].Status != "running"
	})
	first := runs.Runs[len(runs.Runs)-1]
	t.Logf("run: %+v", first)
	assert.Equal(t, "drift", first.Status, "error: %s", first.Error)
	assert.Contains(t, first.Tool, "erraform")
	code, body := get("/api/v1/runs/" + first.ID)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "dwtest_file.hosts")
	select {
	case msg := <-slackMsgs:
		t.Logf("slack stand-in got: %.300s", msg)
		assert.True(t, strings.HasPrefix(msg, "/services/T0/B0/secret "), msg)
		assert.Contains(t, msg, "network")
	case <-time.After(time.Minute):
		t.Fatal("no incident reached the Slack stand-in")
	}

	t.Run("leader killed", func(t *testing.T) {
		// SIGKILL the daemon's container: the kubelet restarts it
		// (restartPolicy Always) in the same pod; the new process takes
		// the Lease once the dead holder's expires, reopens the store on
		// the pod's volume (the killed process's store lock gone with it)
		// and still has the run.
		old := *lease.Spec.HolderIdentity
		names := k.podContainers(chartNamespace, pod.Name, false)
		require.Len(t, names, 1)
		killed := time.Now()
		out, err := exec.Command(env.CLI, "kill", "--signal", "KILL", names[0]).CombinedOutput()
		require.NoError(t, err, "%s", out)
		// Until the dead holder's Lease expires the new process is a
		// standby: alive (the chart's liveness probe, /healthz) but not
		// ready (its readiness probe, /readyz), so no Service traffic.
		standby, notReady := false, false
		waitFor("a new leader", 2*time.Minute, func() bool {
			if live, _ := get("/healthz"); live == http.StatusOK {
				if ready, _ := get("/readyz"); ready == http.StatusServiceUnavailable {
					standby = true
				}
			}
			if r, _ := podReady(pod.Name); !r {
				notReady = true
			}
			l, err := cs.CoordinationV1().Leases(chartNamespace).Get(ctx, chartRelease+"-leader", metav1.GetOptions{})
			require.NoError(t, err)
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != old && *l.Spec.HolderIdentity != ""
		})
		assert.True(t, standby, "never saw the restarted daemon live but not ready while the old Lease held")
		assert.True(t, notReady, "the pod never went unready")
		waitFor("the restarted daemon ready", time.Minute, func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
		waitFor("the pod Ready again, restarted once", 30*time.Second, func() bool { r, n := podReady(pod.Name); return r && n == 1 })
		t.Logf("taken over %s after the kill", time.Since(killed).Round(time.Millisecond))
		code, body := get("/api/v1/runs/" + first.ID)
		require.Equal(t, http.StatusOK, code, body)
	})

	t.Run("helm upgrade", func(t *testing.T) {
		// A config change changes the pod template (checksum/config); the
		// Deployment (strategy Recreate) replaces the pod: the old daemon
		// stops on SIGTERM well within its grace, the new one runs the
		// new config.
		out, err := helm(t, "upgrade", chartRelease, chartDir(t), "--namespace", chartNamespace,
			"--kubeconfig", c.Kubeconfig, "-f", writeValues(`    - name: network-again
      source: {path: `+runImageWS+`}
      schedule: "@hourly"`))
		require.NoError(t, err, out)
		dep, err := cs.AppsV1().Deployments(chartNamespace).Get(ctx, chartRelease, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEqual(t, pod.Annotations["checksum/config"], dep.Spec.Template.Annotations["checksum/config"], "the config change does not change the pod template")
		stopping := time.Now()
		require.NoError(t, cs.CoreV1().Pods(chartNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}))
		waitFor("the old daemon's container gone", 2*time.Minute, func() bool {
			return len(k.podContainers(chartNamespace, pod.Name, true)) == 0
		})
		stopped := time.Since(stopping)
		t.Logf("old daemon stopped in %s (grace %ds)", stopped.Round(time.Millisecond), *pod.Spec.TerminationGracePeriodSeconds)
		assert.Less(t, stopped, 20*time.Second, "the daemon did not stop on SIGTERM")
		deployPod(chartRelease + "-kubetest-2")
		waitFor("the new daemon ready", 90*time.Second, func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
		code, body := get("/api/v1/workspaces/network-again")
		assert.Equal(t, http.StatusOK, code, body)
	})
}
