package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// runToken is the daemon's API token; no output may ever show it.
const runToken = "tok-CANARY-7f3a"

var errTestBusy = errors.New("busy")

// testDaemon is the real internal/server over a sqlite store and a
// runlog.Registry, with Trigger and Cancel doing what the daemon's do: a
// triggered run is recorded queued with a live log; the test then plays
// the run (start, log lines, finish, save log, close, unregister).
type testDaemon struct {
	t      *testing.T
	st     *sqlite.Store
	reg    *runlog.Registry
	ts     *httptest.Server
	url    string
	tok    string // token file holding runToken
	queued chan string

	mu       sync.Mutex
	n        int
	active   map[string]string // workspace -> queued or running run
	requests []string          // "METHOD PATH Authorization"
}

func newTestDaemon(t *testing.T, externalURL string) *testDaemon {
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	d := &testDaemon{t: t, st: st, reg: runlog.NewRegistry(), queued: make(chan string, 10), active: map[string]string{}}
	d.tok = filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(d.tok, []byte(runToken+"\n"), 0o600))
	srv, err := server.New(server.Options{
		Store:    st,
		Control:  testControl{d},
		Gatherer: prometheus.NewRegistry(),
		Logger:   logger,
		Config:   config.Server{TokenFile: d.tok, ExternalURL: externalURL},
		Logs:     st,
	})
	require.NoError(t, err)
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.requests = append(d.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		d.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	d.ts, d.url = ts, ts.URL
	return d
}

func (d *testDaemon) trigger(name string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, busy := d.active[name]; busy {
		return id, errTestBusy // the daemon names the run it is busy with
	}
	d.n++
	id := fmt.Sprintf("run-%d", d.n)
	l := runlog.New(1<<20, nil)
	l.Printf("== queued (trigger manual): waiting for a run slot ==")
	d.reg.Add(id, l, nil)
	if err := d.st.QueueRun(context.Background(), store.Run{ID: id, Workspace: name, Trigger: "manual", StartedAt: time.Now()}); err != nil {
		return "", err
	}
	d.active[name] = id
	d.queued <- id
	return id, nil
}

// testControl is the test daemon as the server's Control: the daemon's
// errors mapped onto the server's, as the daemon's Control does.
type testControl struct{ d *testDaemon }

func (c testControl) Workspaces() []server.WorkspaceInfo {
	return []server.WorkspaceInfo{{Name: "net"}, {Name: "payments"}}
}

func (c testControl) Trigger(name string) (string, error) {
	id, err := c.d.trigger(name)
	if errors.Is(err, errTestBusy) {
		return "", &server.BusyError{RunID: id, Err: err}
	}
	return id, err
}

func (c testControl) Cancel(id string) (bool, error) {
	queued, err := c.d.cancel(id)
	if errors.Is(err, runlog.ErrNotRunning) {
		return false, fmt.Errorf("%w: %w", server.ErrNotRunning, err)
	}
	return queued, err
}

func (c testControl) Ready() error                                               { return nil }
func (c testControl) LiveLog(id string) *runlog.Log                              { return c.d.reg.Live(id) }
func (c testControl) Notifiers(context.Context) ([]server.NotifierStatus, error) { return nil, nil }

// cancel cancels a queued run at once, as the daemon does.
func (d *testDaemon) cancel(id string) (bool, error) {
	r, err := d.st.Run(context.Background(), id)
	if err != nil {
		return false, err
	}
	if r.Status != store.RunQueued {
		return false, runlog.ErrNotRunning
	}
	r.Status, r.Error, r.FinishedAt = store.RunCancelled, "cancelled by request", time.Now()
	require.NoError(d.t, d.st.FinishQueuedRun(context.Background(), r))
	d.end(r)
	return true, nil
}

// nextRun waits for the command to queue a run.
func (d *testDaemon) nextRun() string {
	select {
	case id := <-d.queued:
		return id
	case <-time.After(10 * time.Second):
		d.t.Fatal("no run was queued")
		return ""
	}
}

// play starts queued run id, logs lines and records it finished as fin.
func (d *testDaemon) play(id string, fin store.Run, lines ...string) {
	ctx := d.t.Context()
	r, err := d.st.Run(ctx, id)
	require.NoError(d.t, err)
	r.Status, r.StartedAt = store.RunRunning, fin.StartedAt
	require.NoError(d.t, d.st.StartQueuedRun(ctx, r))
	l := d.reg.Live(id)
	for _, line := range lines {
		l.Printf("%s", line)
	}
	r.Status, r.Error, r.FinishedAt, r.Findings = fin.Status, fin.Error, fin.FinishedAt, fin.Findings
	if r.Status == store.RunCancelled {
		require.NoError(d.t, d.st.FinishRunOnly(ctx, r))
	} else {
		_, _, err = d.st.FinishRun(ctx, r)
		require.NoError(d.t, err)
	}
	d.end(r)
}

// end saves the log, ends its followers and forgets the run.
func (d *testDaemon) end(r store.Run) {
	l := d.reg.Live(r.ID)
	require.NoError(d.t, d.st.SaveRunLog(context.Background(), r.ID, l.Bytes()))
	l.Close(string(r.Status))
	d.reg.Remove(r.ID)
	d.mu.Lock()
	delete(d.active, r.Workspace)
	d.mu.Unlock()
}

func (d *testDaemon) reqs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.requests...)
}

// runResultOf is what runWorkspace returned and printed.
type runResultOf struct {
	code        int
	out, errOut string
}

// start runs `driftwatch run ARGS --server URL --token-file F` in the
// background with a 10 ms poll.
func (d *testDaemon) start(ctx context.Context, args ...string) (done <-chan runResultOf, stdout, stderr *lockedBuffer) {
	args = append(args, "--server", d.url, "--token-file", d.tok)
	ch := make(chan runResultOf, 1)
	var out, errb lockedBuffer
	go func() {
		code := runWorkspace(ctx, args, &out, &errb, 10*time.Millisecond)
		ch <- runResultOf{code, out.String(), errb.String()}
	}()
	return ch, &out, &errb
}

// run is start and wait.
func (d *testDaemon) run(args ...string) runResultOf {
	done, _, _ := d.start(d.t.Context(), args...)
	return d.wait(done)
}

func (d *testDaemon) wait(done <-chan runResultOf) runResultOf {
	select {
	case r := <-done:
		require.NotContains(d.t, r.out+r.errOut, runToken)
		return r
	case <-time.After(10 * time.Second):
		d.t.Fatal("driftwatch run did not return")
		return runResultOf{}
	}
}

var (
	runT0      = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	driftFound = []drift.Finding{
		{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags"}},
		{Kind: drift.KindPending, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "create"},
		{Kind: drift.KindNoise, Address: "data.aws_caller_identity.me", Type: "aws_caller_identity", Action: "read"},
	}
)

// --wait: the exact requests, the summary on stdout and the exit code of
// each verdict; the token goes in the POST's Authorization header only.
func TestRunWait(t *testing.T) {
	for _, c := range []struct {
		name     string
		fin      store.Run
		wantLine string
		wantCode int
		// progress is the audit-style line on stderr when the run ends.
		progress string
	}{
		{"clean", store.Run{Status: drift.StatusClean, Findings: driftFound[2:]},
			"run run-1 of payments: clean (drift 0, pending 0, forbidden 0) in 41.3s", 0,
			"[1/1] payments: clean (drift 0, pending 0, forbidden 0) in 41.3s"},
		{"drift", store.Run{Status: drift.StatusDrift, Findings: driftFound},
			"run run-1 of payments: drift (drift 1, pending 1, forbidden 0) in 41.3s", 2,
			"[1/1] payments: drift (drift 1, pending 1, forbidden 0) in 41.3s"},
		{"errored", store.Run{Status: drift.StatusErrored, Error: "plan: exit status 1\nError: Invalid provider configuration"},
			"run run-1 of payments: errored in 41.3s: plan: exit status 1", 1,
			"[1/1] payments: errored (drift 0, pending 0, forbidden 0) in 41.3s: plan: exit status 1"},
		{"cancelled", store.Run{Status: store.RunCancelled, Error: "cancelled by request"},
			"run run-1 of payments: cancelled, no verdict in 41.3s: cancelled by request", 1,
			"[1/1] payments: cancelled in 41.3s: cancelled by request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDaemon(t, "")
			done, _, _ := d.start(t.Context(), "payments", "--wait")
			id := d.nextRun()
			require.Equal(t, "run-1", id)
			c.fin.StartedAt, c.fin.FinishedAt = runT0, runT0.Add(41300*time.Millisecond)
			d.play(id, c.fin, "== plan ==")
			r := d.wait(done)
			require.Equal(t, c.wantCode, r.code, r.errOut)
			require.Equal(t, c.wantLine+"\n", r.out)
			require.Equal(t, "run run-1 of payments: queued\n[0/1] payments: started\n"+c.progress+"\n", r.errOut)

			reqs := d.reqs()
			require.Equal(t, []string{
				"POST /api/v1/workspaces/payments/runs Bearer " + runToken,
				"GET /api/v1/runs/run-1 ", // its page's URL
			}, reqs[:2])
			require.NotEmpty(t, reqs[2:])
			for _, r := range reqs[2:] {
				require.Equal(t, "GET /api/v1/runs/run-1 ", r, "only the run is polled, without the token")
			}
		})
	}
}

// A run the daemon died during (the next start errors it with
// store.RunRestartedError) is errored: exit 1. A restart while the run is
// still queued does not end the wait: the next daemon queues it again under
// its id. The poll outlives the log stream.
func TestRunWaitDaemonRestarted(t *testing.T) {
	ctx := t.Context()
	d := newTestDaemon(t, "")
	done, _, _ := d.start(ctx, "net", "--wait")
	id := d.nextRun()

	// A restart with the run queued: it stays queued, the wait goes on.
	recovered, err := d.st.RecoverRuns(ctx, time.Now())
	require.NoError(t, err)
	require.Empty(t, recovered.Errored)
	require.Len(t, recovered.Queued, 1)
	require.Equal(t, id, recovered.Queued[0].ID, "the queued run is recovered")
	select {
	case r := <-done:
		t.Fatalf("the wait ended while the run was still queued: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}

	// The next daemon starts it under its id, and dies during it.
	r, err := d.st.Run(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunQueued, r.Status)
	r.StartedAt = time.Now()
	require.NoError(t, d.st.StartQueuedRun(ctx, r))
	recovered, err = d.st.RecoverRuns(ctx, r.StartedAt.Add(5*time.Second))
	require.NoError(t, err)
	require.Empty(t, recovered.Queued)
	require.Len(t, recovered.Errored, 1)
	require.Equal(t, id, recovered.Errored[0].ID)

	res := d.wait(done)
	require.Equal(t, 1, res.code)
	require.Equal(t, "run "+id+" of net: errored in 5s: "+store.RunRestartedError+"\n", res.out)
}

// --follow: log lines reach stdout while the run is in flight, the verdict
// and the run page (with server.external_url) reach stderr, drift exits 2.
func TestRunFollow(t *testing.T) {
	d := newTestDaemon(t, "https://drift.example.com/dw")
	done, out, _ := d.start(t.Context(), "payments", "--follow")
	id := d.nextRun()
	require.Eventually(t, func() bool {
		return out.String() == "== queued (trigger manual): waiting for a run slot ==\n"
	}, 5*time.Second, 10*time.Millisecond, "the queued run's log is followed at once")
	d.play(id, store.Run{Status: drift.StatusDrift, Findings: driftFound, StartedAt: runT0, FinishedAt: runT0.Add(2 * time.Second)},
		"== plan ==", "  ~ aws_s3_bucket.logs")
	r := d.wait(done)
	require.Equal(t, 2, r.code, r.errOut)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n== plan ==\n  ~ aws_s3_bucket.logs\n", r.out)
	page := "https://drift.example.com/dw/runs/" + id
	require.Equal(t, "run "+id+" of payments: queued ("+page+")\n"+
		"[0/1] payments: started\n"+
		"[1/1] payments: drift (drift 1, pending 1, forbidden 0) in 2s\n"+
		"run "+id+" of payments: drift (drift 1, pending 1, forbidden 0) in 2s ("+page+")\n", r.errOut)
	reqs := d.reqs()
	require.Equal(t, "GET /api/v1/runs/"+id+"/logs Bearer "+runToken, reqs[2], "the log is read with the token")
	require.Equal(t, "GET /api/v1/runs/"+id+" ", reqs[len(reqs)-1])
}

// A log stream cut short (a daemon restart, a proxy) is not the verdict:
// the command says so and polls the run until it ends.
func TestRunFollowStreamBreaks(t *testing.T) {
	d := newTestDaemon(t, "")
	done, out, errb := d.start(t.Context(), "net", "-f")
	id := d.nextRun()
	require.Eventually(t, func() bool { return out.String() != "" }, 5*time.Second, 10*time.Millisecond, "following")
	d.ts.CloseClientConnections()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "waiting for its verdict") }, 5*time.Second, 10*time.Millisecond)
	d.play(id, store.Run{Status: drift.StatusClean, StartedAt: runT0, FinishedAt: runT0.Add(time.Second)}, "== plan ==")
	r := d.wait(done)
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, "== queued (trigger manual): waiting for a run slot ==\n", r.out)
	require.Equal(t, "run "+id+" of net: queued\n"+
		"[0/1] net: started\n"+
		"driftwatch: log stream of run "+id+" cut short (unexpected EOF); waiting for its verdict\n"+
		"[1/1] net: clean (drift 0, pending 0, forbidden 0) in 1s\n"+
		"run "+id+" of net: clean (drift 0, pending 0, forbidden 0) in 1s\n", r.errOut)
}

// Without --follow or --wait: the queued line (or the API's JSON) on
// stdout, exit 0, nothing waited for.
func TestRunQueuedOnly(t *testing.T) {
	d := newTestDaemon(t, "")
	r := d.run("payments")
	require.Equal(t, runResultOf{0, "run run-1 of payments: queued\n", ""}, r)

	r = d.run("net", "--format", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.JSONEq(t, `{"workspace": "net", "run_id": "run-2", "status": "queued"}`, r.out)
	require.Len(t, d.reqs(), 4, "a trigger and a workspace lookup each")
}

// --wait --format json: the API's run plus its page URL.
func TestRunWaitJSON(t *testing.T) {
	d := newTestDaemon(t, "https://drift.example.com")
	done, _, _ := d.start(t.Context(), "payments", "--wait", "--format", "json")
	id := d.nextRun()
	d.play(id, store.Run{Status: drift.StatusDrift, Findings: driftFound, StartedAt: runT0, FinishedAt: runT0.Add(time.Second)})
	r := d.wait(done)
	require.Equal(t, 2, r.code, r.errOut)
	var got struct {
		ID       string       `json:"id"`
		Status   string       `json:"status"`
		URL      string       `json:"url"`
		Counts   drift.Counts `json:"counts"`
		Findings []struct {
			Address string `json:"address"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.out), &got), r.out)
	require.Equal(t, id, got.ID)
	require.Equal(t, "drift", got.Status)
	require.Equal(t, "https://drift.example.com/runs/"+id, got.URL)
	require.Equal(t, drift.Counts{Drift: 1, Pending: 1, Noise: 1}, got.Counts)
	require.Len(t, got.Findings, 3)
}

// Refusals: a busy workspace names the run in flight, an unknown workspace
// and a wrong token say what is wrong; all exit 1 and never show a token.
func TestRunRefused(t *testing.T) {
	d := newTestDaemon(t, "")
	require.Equal(t, 0, d.run("payments").code)
	busyID := d.nextRun()

	r := d.run("payments", "--follow")
	require.Equal(t, 1, r.code)
	require.Equal(t, "driftwatch: run payments: a run of payments is already queued or running: "+busyID+
		" (driftwatch logs "+busyID+" --follow shows it)\n", r.errOut)
	require.Empty(t, r.out)

	r = d.run("paymnts", "--wait")
	require.Equal(t, 1, r.code)
	require.Equal(t, "driftwatch: run paymnts: 404 Not Found: unknown workspace: the daemon at "+d.url+
		" has no workspace \"paymnts\" ("+d.url+"/api/v1/workspaces lists its workspaces)\n", r.errOut)

	bad := filepath.Join(t.TempDir(), "bad-token")
	require.NoError(t, os.WriteFile(bad, []byte("tok-CANARY-wrong"), 0o600))
	var out, errb lockedBuffer
	code := runWorkspace(t.Context(), []string{"net", "--wait", "--server", d.url, "--token-file", bad}, &out, &errb, time.Millisecond)
	require.Equal(t, 1, code)
	require.Equal(t, "driftwatch: run net: 401 Unauthorized: invalid bearer token: the daemon at "+d.url+
		" rejected the token in "+bad+" (it must hold the daemon's server.token_file token)\n", errb.String())
	require.NotContains(t, errb.String(), "CANARY")
	require.Equal(t, "POST /api/v1/workspaces/net/runs Bearer tok-CANARY-wrong", d.reqs()[len(d.reqs())-1])
	select {
	case id := <-d.queued:
		t.Fatalf("run %s was queued", id)
	default:
	}
}

// Ctrl-C while waiting stops waiting and leaves the run alone; with
// --cancel-on-interrupt it cancels the run.
func TestRunInterrupt(t *testing.T) {
	d := newTestDaemon(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	done, _, errb := d.start(ctx, "payments", "--wait")
	id := d.nextRun()
	require.Eventually(t, func() bool { return errb.String() != "" }, 5*time.Second, 10*time.Millisecond, "waiting")
	cancel()
	r := d.wait(done)
	require.Equal(t, 1, r.code)
	require.Equal(t, "run "+id+" of payments: queued\n[0/1] payments: started\n"+
		"driftwatch: interrupted: stopped waiting; run "+id+" goes on on the daemon (driftwatch cancel "+id+" stops it)\n", r.errOut)
	run, err := d.st.Run(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, store.RunQueued, run.Status)
	for _, r := range d.reqs() {
		require.NotContains(t, r, "/cancel")
	}
	d.end(run)

	ctx, cancel = context.WithCancel(t.Context())
	done, out, _ := d.start(ctx, "payments", "--follow", "--cancel-on-interrupt")
	id = d.nextRun()
	require.Eventually(t, func() bool { return out.String() != "" }, 5*time.Second, 10*time.Millisecond, "following")
	cancel()
	r = d.wait(done)
	require.Equal(t, 1, r.code)
	require.Equal(t, "run "+id+" of payments: queued\n[0/1] payments: started\n"+
		"driftwatch: interrupted: cancelling run "+id+"\n"+
		"run "+id+": cancelled (it was queued and never started)\n", r.errOut)
	require.Equal(t, "POST /api/v1/runs/"+id+"/cancel Bearer "+runToken, d.reqs()[len(d.reqs())-1])
	run, err = d.st.Run(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, store.RunCancelled, run.Status)
}

// --timeout stops waiting with exit 1; the run goes on.
func TestRunTimeout(t *testing.T) {
	d := newTestDaemon(t, "")
	r := d.run("net", "--wait", "--timeout", "100ms")
	require.Equal(t, 1, r.code)
	require.Equal(t, "run run-1 of net: queued\n[0/1] net: started\n"+
		"driftwatch: run run-1 of net: not finished after 100ms (--timeout); it goes on on the daemon (driftwatch logs run-1 --follow)\n", r.errOut)
}

func TestRunFlags(t *testing.T) {
	empty, twoLines := filepath.Join(t.TempDir(), "empty"), filepath.Join(t.TempDir(), "two-lines")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	require.NoError(t, os.WriteFile(twoLines, []byte("tok-CANARY-1\nother: x\n"), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "driftwatch: usage: driftwatch run WORKSPACE --token-file FILE"},
		{[]string{"net"}, "driftwatch: --token-file is required"},
		{[]string{"net", "--token-file", "t", "--format", "yaml"}, `driftwatch: unknown format "yaml" (use text or json)`},
		{[]string{"net", "--token-file", "t", "--follow", "--format", "json"}, "driftwatch: --format json cannot be combined with --follow"},
		{[]string{"net", "--token-file", "t", "--timeout", "1m"}, "driftwatch: --timeout, --strict and --cancel-on-interrupt need --follow or --wait"},
		{[]string{"net", "extra", "--token-file", "t"}, `driftwatch: unexpected argument "extra"`},
		{[]string{"net", "--token-file", filepath.Join(t.TempDir(), "missing")}, "no such file or directory"},
		{[]string{"net", "--token-file", empty}, "driftwatch: token file " + empty + " is empty"},
		{[]string{"net", "--token-file", twoLines}, "driftwatch: token file " + twoLines + " holds more than one line: it must hold the token alone"},
	} {
		var out, errb lockedBuffer
		require.Equal(t, 1, runWorkspace(t.Context(), c.args, &out, &errb, time.Millisecond), c.args)
		require.Contains(t, errb.String(), c.want, c.args)
		require.NotContains(t, errb.String(), "CANARY")
		require.Empty(t, out.String())
	}
}

func TestRunExitCode(t *testing.T) {
	for _, c := range []struct {
		status drift.Status
		counts drift.Counts
		strict bool
		want   int
	}{
		{drift.StatusClean, drift.Counts{Noise: 3}, false, 0},
		{drift.StatusClean, drift.Counts{Hygiene: 1}, false, 0},
		{drift.StatusClean, drift.Counts{Hygiene: 1}, true, 2},
		{drift.StatusPending, drift.Counts{Pending: 1}, false, 2},
		{drift.StatusDrift, drift.Counts{Drift: 1}, false, 2},
		{drift.StatusForbidden, drift.Counts{Forbidden: 1}, false, 2},
		{drift.StatusErrored, drift.Counts{}, false, 1},
		{store.RunCancelled, drift.Counts{}, false, 1},
		{store.RunInterrupted, drift.Counts{}, false, 1},
		{"skipped", drift.Counts{}, false, 1},
	} {
		var r apiclient.Run
		r.Status, r.Counts = c.status, c.counts
		require.Equal(t, c.want, runExitCode(r, c.strict), c)
	}
}
