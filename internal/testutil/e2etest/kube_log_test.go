package e2etest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftwatch/driftwatch/internal/runner/kube"
)

// TestKubeJobLog: a Job's run keeps and streams its log as a local run
// does. The run pod's runner container sends its (value-free, redacted)
// log to the reporter, which posts it to the daemon with the run's token:
// lines reach a log follower while the pod still runs, and the stored log
// has init's output, the plan and the finding under "== changes ==".
// Neither holds the sensitive variable's value, the drifted file's
// content, nor the run's token.
func TestKubeJobLog(t *testing.T) {
	parallel(t)
	k := startKubeEnv(t)
	ctx := context.Background()
	const apiToken = "dw-api-token-kube-joblog-30-0123456789abcdef0123"
	k.withAPIToken(t, apiToken) // a run's log needs a read credential
	ws := k.e.workspace(t, "logged", map[string]string{
		"main.tf": providers + `
variable "secret" {
  type      = string
  sensitive = true
}
data "dwtest_sleep" "slow" {
  duration = "8s"
}
resource "dwtest_file" "s" {
  filename          = "@ROOT@/out/logged-secret.txt"
  sensitive_content = var.secret
}
`,
		"secret.tfvars": `secret = "` + canarySensitive + `"` + "\n",
	})
	k.e.apply(t, ws, "-var-file=secret.tfvars")
	require.NoError(t, os.WriteFile(filepath.Join(k.e.root, "out", "logged-secret.txt"), []byte(canaryDrifted), 0o644))
	k.extraWorkspaces = "  - name: logged\n    source: { path: ./logged }\n    var_files: [secret.tfvars]"
	listen := freePort(t)
	cfg := k.config(t, "driftwatch.yaml", listen, "data", "")
	d := startDaemon(t, cfg, listen)

	var runID string
	d.eventually("logged's run started", 2*time.Minute, func() bool {
		runs := d.runs("logged")
		if len(runs) == 1 && runs[0].Status == "running" {
			runID = runs[0].ID
			return true
		}
		return false
	})
	// The run's token, from its Secret (the reporter's mount), while the
	// Job runs.
	var runToken string
	d.eventually("the run's Secret", time.Minute, func() bool {
		jobs, err := k.cs.BatchV1().Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelWorkspace + "=logged"})
		require.NoError(t, err)
		if len(jobs.Items) != 1 {
			return false
		}
		s, err := k.cs.CoreV1().Secrets(k.ns).Get(ctx, jobs.Items[0].Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		runToken = string(s.Data["token"])
		return runToken != ""
	})

	sseCtx, stop := context.WithTimeout(t.Context(), 3*time.Minute)
	defer stop()
	stall := time.AfterFunc(170*time.Second, func() { _ = d.cmd.Process.Signal(syscall.SIGQUIT) })
	defer stall.Stop()
	resp := openLogStream(t, sseCtx, d, runID, apiToken)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "data.dwtest_sleep.slow: reading") {
			break
		}
	}
	require.NoError(t, sseCtx.Err(), "the log stream stalled: %q", seen)
	// The plan's progress says the data source is being read (it sleeps
	// 8 s): the pod still runs.
	require.Equal(t, "running", d.runs("logged")[0].Status, "lines arrive while the Job runs")
	jobs, err := k.cs.BatchV1().Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelWorkspace + "=logged"})
	require.NoError(t, err)
	require.Len(t, jobs.Items, 1)
	for _, c := range jobs.Items[0].Status.Conditions {
		if c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed {
			require.NotEqual(t, corev1.ConditionTrue, c.Status, "the Job had finished: %+v", c)
		}
	}
	joined := strings.Join(seen, "\n")
	require.Contains(t, joined, "== init ==", "init's lines streamed")
	require.Contains(t, joined, "== plan ==")

	end := scanToEnd(sc, &seen)
	require.NoError(t, sseCtx.Err(), "the log stream stalled")
	require.Equal(t, `data: {"status":"drift"}`, end)

	stored := logSnapshot(t, d, runID, apiToken)
	t.Logf("stored log of the Job's run:\n%s", stored)
	for _, want := range []string{"== init ==", "Terraform has been successfully initialized", "== plan ==", "== changes =="} {
		require.Contains(t, stored, want)
	}
	_, changes, ok := strings.Cut(stored, "== changes ==\n")
	require.True(t, ok)
	require.Regexp(t, `(?m)^drift\s+update\s+dwtest_file\.s\b`, changes, "the finding under == changes ==")
	// What was streamed is what was stored (the follower saw every line).
	var streamed []string
	for _, s := range seen {
		if line, ok := strings.CutPrefix(s, "data: "); ok && s != end {
			streamed = append(streamed, line)
		}
	}
	require.Equal(t, strings.TrimSuffix(stored, "\n"), strings.Join(streamed, "\n"))

	all := strings.Join(seen, "\n") + stored + d.logs.String()
	for _, canary := range []string{canarySensitive, canaryDrifted, runToken} {
		require.NotContains(t, all, canary)
	}
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second), d.logs.String())
}
