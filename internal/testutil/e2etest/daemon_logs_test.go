package e2etest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// TestDaemonLogsAndCancel follows a slow plan's log live over SSE, cancels
// the run through the API, and checks the run ends cancelled with no
// Terraform left, its stored log redacted.
func TestDaemonLogsAndCancel(t *testing.T) {
	parallel(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	e.workspace(t, "slow", map[string]string{"main.tf": fmt.Sprintf(slowWorkspace, "60s") + `
variable "marker" { type = string }
resource "terraform_data" "m" {
  input = var.marker
}
`})
	e.workspace(t, "quick", map[string]string{"main.tf": `output "x" { value = 1 }` + "\n"})
	token := "dw-api-token-logs-77-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
max_concurrent_runs: 1
workspaces:
  - name: quick
    source: { path: ./quick }
  - name: slow
    source: { path: ./slow }
    vars: { marker: "CANARY-var-in-log-9d1" }
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db")))
	d := startDaemon(t, cfg, listen)
	// The initial runs go one at a time: quick's, then slow's.
	d.eventually("quick's initial run done", 60*time.Second, func() bool {
		runs := d.runs("quick")
		return len(runs) == 1 && runs[0].Status == "clean"
	})
	var runID string
	d.eventually("slow run started", 60*time.Second, func() bool {
		runs := d.runs("slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			runID = runs[0].ID
			return true
		}
		return false
	})

	// Never hang: if the stream stalls, dump the daemon's goroutines into
	// its log (printed on failure) and fail.
	sseCtx, stopSSE := context.WithTimeout(t.Context(), 90*time.Second)
	defer stopSSE()
	stall := time.AfterFunc(85*time.Second, func() { _ = d.cmd.Process.Signal(syscall.SIGQUIT) })
	defer stall.Stop()
	// Logs need a read credential: the API token is one.
	resp := openLogStream(t, sseCtx, d, runID, "")
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no log without a read credential")
	resp = openLogStream(t, sseCtx, d, runID, token)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "== plan ==") {
			break
		}
	}
	require.Contains(t, strings.Join(seen, "\n"), "== init ==")
	require.Equal(t, "running", d.runs("slow")[0].Status, "lines arrive while the run is still going")

	// The one run slot is taken: a run of quick is queued, with an id to
	// follow and cancel it by. Cancelled, it never starts.
	queued := triggerRun(t, d, "quick", token)
	var qrun apiRun
	d.getJSON("/api/v1/runs/"+queued, &qrun)
	require.Equal(t, apiRun{ID: queued, Status: "queued", Trigger: "manual"}, qrun)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n", logSnapshot(t, d, queued, token), "driftwatch logs ID")
	qresp := openLogStream(t, sseCtx, d, queued, token)
	defer qresp.Body.Close()
	qsc := bufio.NewScanner(qresp.Body)
	require.True(t, qsc.Scan())
	require.Equal(t, "data: == queued (trigger manual): waiting for a run slot ==", qsc.Text(), "a follower waits on a queued run")
	time.Sleep(time.Second) // queued stays queued while the slot is taken
	d.getJSON("/api/v1/runs/"+queued, &qrun)
	require.Equal(t, "queued", qrun.Status)
	code, body := postBody(t, d, "/api/v1/runs/"+queued+"/cancel", token)
	require.Equal(t, http.StatusAccepted, code, body)
	require.JSONEq(t, `{"run": "`+queued+`", "status": "cancelled"}`, body)
	var qevents []string
	for qsc.Scan() {
		qevents = append(qevents, qsc.Text())
		if qsc.Text() == "event: end" {
			break
		}
	}
	require.True(t, qsc.Scan())
	require.Equal(t, `data: {"status":"cancelled"}`, qsc.Text(), "events: %q", qevents)
	d.getJSON("/api/v1/runs/"+queued, &qrun)
	require.Equal(t, apiRun{ID: queued, Status: "cancelled", Trigger: "manual", Error: "cancelled by request"}, qrun)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n== cancelled while queued: cancelled by request ==\n",
		logSnapshot(t, d, queued, token))
	require.Equal(t, http.StatusConflict, d.post("/api/v1/runs/"+queued+"/cancel", token), "cancelled already")
	require.Equal(t, 1, tfProcesses(e.workDir()), "only slow's Terraform runs:\n%s", describeTF(e.workDir()))
	require.Equal(t, "running", d.runs("slow")[0].Status, "the running run is not affected")
	require.Equal(t, "clean", d.workspaces()["quick"].Status, "a cancelled queued run changes no state")

	require.Equal(t, http.StatusUnauthorized, d.post("/api/v1/runs/"+runID+"/cancel", ""))
	require.Equal(t, http.StatusAccepted, d.post("/api/v1/runs/"+runID+"/cancel", token))
	end := scanToEnd(sc, &seen)
	require.NoError(t, sseCtx.Err(), "the log stream stalled")
	require.Equal(t, `data: {"status":"cancelled"}`, end)
	d.eventually("run recorded cancelled", 30*time.Second, func() bool {
		r := d.runs("slow")
		return len(r) == 1 && r[0].Status == "cancelled"
	})
	require.Zero(t, tfProcesses(e.workDir()), "no Terraform left after cancel")
	require.Equal(t, "unknown", d.workspaces()["slow"].Status, "a cancelled run changes no state")

	stored := logSnapshot(t, d, runID, token)
	require.Contains(t, stored, "== plan ==")
	all := strings.Join(seen, "\n") + stored
	require.NotContains(t, all, "CANARY-var-in-log-9d1")
	require.Equal(t, http.StatusConflict, d.post("/api/v1/runs/"+runID+"/cancel", token), "not running any more")
	// The slot is free now: the cancelled run of quick still never starts.
	time.Sleep(2 * time.Second)
	require.Equal(t, []apiRun{{ID: queued, Status: "cancelled", Trigger: "manual", Error: "cancelled by request"}},
		d.runs("quick")[:1])
	require.Len(t, d.runs("quick"), 2)
	require.Zero(t, tfProcesses(e.workDir()))
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
}

// triggerRun queues a run through the API and returns its id.
func triggerRun(t *testing.T, d *daemonProc, ws, token string) string {
	t.Helper()
	code, body := postBody(t, d, "/api/v1/workspaces/"+ws+"/runs", token)
	require.Equal(t, http.StatusAccepted, code, body)
	var out struct {
		Workspace string `json:"workspace"`
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	require.Equal(t, ws, out.Workspace)
	require.Equal(t, "queued", out.Status)
	require.Regexp(t, `^[0-9a-f]{16}$`, out.RunID)
	return out.RunID
}

// logSnapshot is what `driftwatch logs ID --token-file F` prints: the log
// so far (or the stored log), read with token.
func logSnapshot(t *testing.T, d *daemonProc, id, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.base+"/api/v1/runs/"+id+"/logs", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// scanToEnd reads a log's event stream, appending each line to seen, up to
// its end event; it returns the end's data line ("" if the stream ended
// without one).
func scanToEnd(sc *bufio.Scanner, seen *[]string) string {
	for sc.Scan() {
		*seen = append(*seen, sc.Text())
		if sc.Text() == "event: end" && sc.Scan() {
			return sc.Text()
		}
	}
	return ""
}

// openLogStream asks for run runID's log as Server-Sent Events, with the
// API token token ("" for none).
func openLogStream(t *testing.T, ctx context.Context, d *daemonProc, runID, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/api/v1/runs/"+runID+"/logs", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}
