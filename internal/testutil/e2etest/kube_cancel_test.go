package e2etest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
)

// TestKubeCancel cancels a run in kubernetes mode through the daemon's API
// while its Job's pod is planning (a slow data source): the Job is deleted
// with background propagation (its pods and its Secret follow), the runner
// process in the pod is gone, the run is recorded cancelled and the
// workspace's state is untouched.
func TestKubeCancel(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	cs, ctx, ns := k.cs, context.Background(), k.ns
	k.e.workspace(t, "slow", map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "120s")})
	k.extraWorkspaces = "  - name: slow\n    source: { path: ./slow }"
	listen := freePort(t)
	token := "dw-api-token-kube-cancel-31-0123456789abcdef0123456789"
	k.withAPIToken(t, token)
	cfg := k.config(t, "driftwatch.yaml", listen, "data", "")

	d := startDaemon(t, cfg, listen)
	var runID string
	d.eventually("slow run started", time.Minute, func() bool {
		runs := d.runs("slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			runID = runs[0].ID
			return true
		}
		return false
	})
	jobName := kube.JobName("slow", runID)
	var dir string
	d.eventually("the pod's Terraform is planning", 2*time.Minute, func() bool {
		if dir == "" {
			dir = podDir(runID)
		}
		return dir != "" && strings.Contains(strings.Join(podProcesses(dir), "\n"), "plan")
	})
	t.Logf("pod processes before cancel:\n%s", strings.Join(podProcesses(dir), "\n"))
	job, err := cs.BatchV1().Jobs(ns).Get(ctx, jobName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, runID, job.Annotations[kube.AnnotationRunID])
	_, err = cs.CoreV1().Secrets(ns).Get(ctx, jobName, metav1.GetOptions{})
	require.NoError(t, err, "the run's Secret exists while the Job runs")

	code, body := postBody(t, d, "/api/v1/runs/"+runID+"/cancel", token)
	require.Equal(t, 202, code, body)
	require.JSONEq(t, `{"run": "`+runID+`", "status": "cancelling"}`, body)

	d.eventually("run recorded cancelled", time.Minute, func() bool {
		runs := d.runs("slow")
		return len(runs) == 1 && runs[0].Status == "cancelled"
	})
	d.eventually("the Job is deleted", time.Minute, func() bool {
		_, err := cs.BatchV1().Jobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	// Background propagation: the garbage collector deletes the Job's
	// dependents after the Job itself.
	d.eventually("its pods and Secret are deleted", time.Minute, func() bool {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + jobName})
		require.NoError(t, err)
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				return false
			}
		}
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, jobName, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && s.DeletionTimestamp != nil)
	})
	d.eventually("no runner process left", 30*time.Second, func() bool { return len(podProcesses(dir)) == 0 })

	var run apiRun
	d.getJSON("/api/v1/runs/"+runID, &run)
	require.Equal(t, "cancelled", run.Status)
	require.Equal(t, "cancelled by request", run.Error)
	require.Equal(t, "unknown", d.workspaces()["slow"].Status, "a cancelled run changes no state")
	require.Equal(t, 409, d.post("/api/v1/runs/"+runID+"/cancel", token), "not running any more")
	require.NotContains(t, d.logs.String(), token)
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
}

// podDir finds the temp dir the played kubelet (kubetest.Processes) runs
// runID's pod in: the one whose runner container's spec names the run.
func podDir(runID string) string {
	specs, _ := filepath.Glob(filepath.Join(os.TempDir(), "kubetest-pod-*", "containers", kube.ContainerName, "run", "spec.json"))
	for _, f := range specs {
		var spec struct {
			RunID string `json:"run_id"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &spec) == nil && spec.RunID == runID {
			return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f))))
		}
	}
	return ""
}

// podProcesses lists the processes of the pod played in dir (the
// `driftwatch runner` and the Terraform it starts, providers, and the
// `driftwatch runner report`): their command line or working directory is
// in dir.
func podProcesses(dir string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if strings.Contains(string(cmd), dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, p.Name()+" "+cwd+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}
