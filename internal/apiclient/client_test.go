package apiclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// statusErr asserts err is a *StatusError matching sentinel with text want.
func statusErr(t *testing.T, err error, sentinel error, want string) *apiclient.StatusError {
	t.Helper()
	var se *apiclient.StatusError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, sentinel)
	require.Equal(t, want, err.Error())
	require.NotContains(t, err.Error(), "CANARY")
	return se
}

// requireStatus is statusErr for callers that need only its assertions.
func requireStatus(t *testing.T, err error, sentinel error, want string) {
	t.Helper()
	_ = statusErr(t, err, sentinel, want)
}

// Trigger: the exact request (the API token, JSON accepted, no body) and
// the queued run.
func TestTrigger(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	c := apiclient.New(d.url+"/", d.apiTokenFile, nil) // a trailing slash is ignored
	q, err := c.Trigger(t.Context(), "payments")
	require.NoError(t, err)
	require.Equal(t, apiclient.Queued{Workspace: "payments", RunID: "run-1", Status: apiclient.StatusQueued}, q)
	require.Equal(t, []request{{
		Method: "POST", URI: "/api/v1/workspaces/payments/runs",
		Authorization: "Bearer " + apiToken, Accept: "application/json",
	}}, d.reqs())
}

// Trigger's refusals are typed and carry the daemon's reason: a busy
// workspace (with its run), an unknown one, a wrong or missing token, a
// daemon that does not schedule.
func TestTriggerRefused(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	c := apiclient.New(d.url, d.apiTokenFile, nil)
	_, err := c.Trigger(t.Context(), "payments")
	require.NoError(t, err)

	_, err = c.Trigger(t.Context(), "payments")
	se := statusErr(t, err, apiclient.ErrConflict, "409 Conflict: a run of this workspace is already queued or running")
	require.Equal(t, apiclient.StatusError{Code: 409, Status: "409 Conflict", Message: "a run of this workspace is already queued or running", RunID: "run-1"}, *se)

	_, err = c.Trigger(t.Context(), "no such")
	requireStatus(t, err, apiclient.ErrNotFound, "404 Not Found: unknown workspace")
	require.Equal(t, "/api/v1/workspaces/no%20such/runs", d.last().URI)

	wrong := writeFile(t, "wrong", "wrong-tok-CANARY")
	_, err = apiclient.New(d.url, wrong, nil).Trigger(t.Context(), "net")
	requireStatus(t, err, apiclient.ErrUnauthorized, "401 Unauthorized: invalid bearer token")
	require.Equal(t, "Bearer wrong-tok-CANARY", d.last().Authorization)

	_, err = apiclient.New(d.url, "", nil).Trigger(t.Context(), "net")
	require.ErrorIs(t, err, apiclient.ErrUnauthorized)
	require.Empty(t, d.last().Authorization, "no token file, no credential")

	d.mu.Lock()
	d.unavailable = true
	d.mu.Unlock()
	_, err = c.Trigger(t.Context(), "net")
	requireStatus(t, err, apiclient.ErrUnavailable, "503 Service Unavailable: unavailable: this replica is a standby; the leader runs workspaces")
	require.NotErrorIs(t, err, apiclient.ErrNotFound)

	d.mu.Lock()
	defer d.mu.Unlock()
	require.Equal(t, 1, d.n, "only the first trigger queued a run")
}

// GetRun reads a run without a credential, as it goes from queued to
// finished; its page URL is absolute with server.external_url.
func TestGetRun(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{externalURL: "https://drift.example.com/dw"})
	c := apiclient.New(d.url, d.apiTokenFile, nil)
	q, err := c.Trigger(t.Context(), "payments")
	require.NoError(t, err)

	r, err := c.GetRun(t.Context(), q.RunID)
	require.NoError(t, err)
	require.Equal(t, request{Method: "GET", URI: "/api/v1/runs/run-1", Accept: "application/json"}, d.last(), "runs are read without the token")
	require.Equal(t, "run-1", r.ID)
	require.Equal(t, "payments", r.Workspace)
	require.Equal(t, apiclient.StatusQueued, r.Status)
	require.False(t, r.Finished())
	require.Equal(t, "https://drift.example.com/dw/runs/run-1", r.URL)
	require.Equal(t, "run-1", rawField(t, r.Raw, "id"), "Raw is the whole answer")

	d.start(q.RunID, "== plan ==")
	r, err = c.GetRun(t.Context(), q.RunID)
	require.NoError(t, err)
	require.Equal(t, apiclient.StatusRunning, r.Status)
	require.False(t, r.Finished())

	d.finish(q.RunID, store.Run{Status: drift.StatusDrift, FinishedAt: runT0.Add(41300 * time.Millisecond), Findings: []drift.Finding{
		{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags"}},
		{Kind: drift.KindPending, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "create"},
		{Kind: drift.KindNoise, Address: "data.aws_caller_identity.me", Type: "aws_caller_identity", Action: "read"},
	}})
	r, err = c.GetRun(t.Context(), q.RunID)
	require.NoError(t, err)
	require.True(t, r.Finished())
	require.Equal(t, apiclient.StatusDrift, r.Status)
	require.Equal(t, apiclient.Counts{Drift: 1, Pending: 1, Noise: 1}, r.Counts)
	require.NotNil(t, r.DurationSeconds)
	require.InDelta(t, 41.3, *r.DurationSeconds, 0.001)
	require.Len(t, rawField(t, r.Raw, "findings"), 3)

	_, err = c.GetRun(t.Context(), "nope")
	requireStatus(t, err, apiclient.ErrNotFound, "404 Not Found: unknown run")
}

func rawField(t *testing.T, raw json.RawMessage, key string) any {
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[key]
}

// lockedBuffer is a bytes.Buffer safe for a reader polling it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Log and FollowLog against the real server: a snapshot of a run in
// flight as text, the live stream until the verdict, then the stored log
// both ways; each read with the read token, asking for what it wants.
func TestLog(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	q, err := apiclient.New(d.url, d.apiTokenFile, nil).Trigger(t.Context(), "net")
	require.NoError(t, err)
	c := apiclient.New(d.url, d.readTokenFile, nil)
	queuedLine := "== queued (trigger manual): waiting for a run slot ==\n"

	l, err := c.Log(t.Context(), q.RunID, false)
	require.NoError(t, err)
	require.Equal(t, request{Method: "GET", URI: "/api/v1/runs/run-1/logs", Authorization: "Bearer " + readToken, Accept: "text/plain"}, d.last())
	require.False(t, l.Events)
	var out bytes.Buffer
	verdict, err := l.Copy(&out)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.Equal(t, apiclient.Status(""), verdict, "a text log has no verdict")
	require.Equal(t, queuedLine, out.String())

	var live lockedBuffer
	done := make(chan error, 1)
	var liveVerdict apiclient.Status
	go func() {
		var err error
		liveVerdict, err = c.FollowLog(t.Context(), q.RunID, &live)
		done <- err
	}()
	require.Eventually(t, func() bool { return live.String() == queuedLine }, 5*time.Second, 10*time.Millisecond, "a queued run's log is followed at once")
	require.Equal(t, request{Method: "GET", URI: "/api/v1/runs/run-1/logs", Authorization: "Bearer " + readToken, Accept: "text/event-stream"}, d.last())
	d.start(q.RunID, "== plan ==")
	require.Eventually(t, func() bool { return strings.HasSuffix(live.String(), "== plan ==\n") }, 5*time.Second, 10*time.Millisecond, "lines arrive while the run is in flight")
	select {
	case err := <-done:
		t.Fatalf("FollowLog returned before the run ended: %v", err)
	default:
	}
	d.finish(q.RunID, store.Run{Status: drift.StatusClean, FinishedAt: runT0.Add(time.Second)})
	require.NoError(t, <-done)
	require.Equal(t, apiclient.StatusClean, liveVerdict)
	whole := queuedLine + "== plan ==\n"
	require.Equal(t, whole, live.String())

	for _, follow := range []bool{false, true} {
		l, err := c.Log(t.Context(), q.RunID, follow)
		require.NoError(t, err)
		require.Equal(t, follow, l.Events)
		out.Reset()
		verdict, err := l.Copy(&out)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		require.Equal(t, whole, out.String(), "the stored log")
		if follow {
			require.Equal(t, apiclient.StatusClean, verdict)
		}
	}
}

// A log read without a credential, with a wrong one, from a daemon that
// serves logs to nobody, or of an unknown run: typed, with the reason.
func TestLogRefused(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	q, err := apiclient.New(d.url, d.apiTokenFile, nil).Trigger(t.Context(), "net")
	require.NoError(t, err)
	for _, follow := range []bool{false, true} {
		_, err = apiclient.New(d.url, "", nil).Log(t.Context(), q.RunID, follow)
		se := statusErr(t, err, apiclient.ErrUnauthorized, err.Error())
		require.Contains(t, se.Message, "run logs and run pages need a read credential")
		require.Empty(t, d.last().Authorization)

		_, err = apiclient.New(d.url, writeFile(t, "wrong", "wrong-CANARY"), nil).Log(t.Context(), q.RunID, follow)
		requireStatus(t, err, apiclient.ErrUnauthorized, "401 Unauthorized: invalid read credential: it is neither the API token nor the read token")

		_, err = apiclient.New(d.url, d.readTokenFile, nil).Log(t.Context(), "nope", follow)
		requireStatus(t, err, apiclient.ErrNotFound, "404 Not Found: unknown run")

		_, err = apiclient.New(d.url, d.readTokenFile, nil).FollowLog(t.Context(), "nope", &bytes.Buffer{})
		require.ErrorIs(t, err, apiclient.ErrNotFound)
	}

	closed := newTestDaemon(t, daemonOptions{noTokens: true})
	_, err = apiclient.New(closed.url, d.apiTokenFile, nil).Log(t.Context(), "run-1", false)
	se := statusErr(t, err, apiclient.ErrForbidden, err.Error())
	require.Contains(t, se.Message, "none is configured")
}

// Cancel: the exact request (the API token, no body) and both answers; a
// finished or unknown run, and the read token, are refused.
func TestCancel(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	c := apiclient.New(d.url, d.apiTokenFile, nil)
	q, err := c.Trigger(t.Context(), "net")
	require.NoError(t, err)

	res, err := c.Cancel(t.Context(), q.RunID)
	require.NoError(t, err)
	require.Equal(t, apiclient.Cancelled{Run: "run-1", Status: apiclient.StatusCancelled}, res, "a queued run is cancelled at once")
	require.Equal(t, request{Method: "POST", URI: "/api/v1/runs/run-1/cancel", Authorization: "Bearer " + apiToken}, d.last())
	r, err := c.GetRun(t.Context(), q.RunID)
	require.NoError(t, err)
	require.Equal(t, apiclient.StatusCancelled, r.Status)

	q2, err := c.Trigger(t.Context(), "payments")
	require.NoError(t, err)
	d.start(q2.RunID)
	res, err = c.Cancel(t.Context(), q2.RunID)
	require.NoError(t, err)
	require.Equal(t, apiclient.Cancelled{Run: "run-2", Status: apiclient.StatusCancelling}, res, "a running run is asked to stop")

	_, err = c.Cancel(t.Context(), q.RunID)
	requireStatus(t, err, apiclient.ErrConflict, "409 Conflict: the run is not queued or running")
	_, err = c.Cancel(t.Context(), "nope")
	requireStatus(t, err, apiclient.ErrNotFound, "404 Not Found: unknown run")
	_, err = apiclient.New(d.url, d.readTokenFile, nil).Cancel(t.Context(), q2.RunID)
	requireStatus(t, err, apiclient.ErrForbidden, "403 Forbidden: this needs the operator role; token:read has viewer")
}

// decided is the part of a decided remediation these tests check: its
// id, workspace, state and change set hash.
func decided(r apiclient.Remediation) [4]string {
	return [4]string{r.ID, r.Workspace, r.State, r.ChangeSetHash}
}

// Approve and Reject: the exact requests (the API token, JSON, the hash
// only when given) and the daemon's answers.
func TestApproveReject(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	c := apiclient.New(d.url, d.apiTokenFile, nil)

	rem, err := c.Approve(t.Context(), "5e1f00d2a1b2c3d4", "")
	require.NoError(t, err)
	require.Equal(t, [4]string{"5e1f00d2a1b2c3d4", "net", "approved", "h1"}, decided(rem))
	require.Equal(t, request{
		Method: "POST", URI: "/api/v1/remediations/5e1f00d2a1b2c3d4/approve",
		Authorization: "Bearer " + apiToken, ContentType: "application/json",
	}, d.last())

	_, err = c.Approve(t.Context(), "77aa00d2a1b2c3d4", "h-other")
	requireStatus(t, err, apiclient.ErrConflict, "409 Conflict: "+server.ErrHashMismatch.Error())
	require.Equal(t, request{
		Method: "POST", URI: "/api/v1/remediations/77aa00d2a1b2c3d4/approve",
		Authorization: "Bearer " + apiToken, ContentType: "application/json", Body: `{"change_set_hash":"h-other"}`,
	}, d.last())

	rem, err = c.Reject(t.Context(), "77aa00d2a1b2c3d4")
	require.NoError(t, err)
	require.Equal(t, [4]string{"77aa00d2a1b2c3d4", "payments", "rejected", "h2"}, decided(rem))
	require.Equal(t, request{
		Method: "POST", URI: "/api/v1/remediations/77aa00d2a1b2c3d4/reject",
		Authorization: "Bearer " + apiToken, ContentType: "application/json",
	}, d.last())

	_, err = c.Reject(t.Context(), "77aa00d2a1b2c3d4")
	requireStatus(t, err, apiclient.ErrConflict, "409 Conflict: conflict: remediation 77aa00d2a1b2c3d4 is rejected, not pending")
	_, err = c.Approve(t.Context(), "0000000000000000", "")
	requireStatus(t, err, apiclient.ErrNotFound, "404 Not Found: unknown remediation")
	_, err = apiclient.New(d.url, d.readTokenFile, nil).Reject(t.Context(), "5e1f00d2a1b2c3d4")
	requireStatus(t, err, apiclient.ErrForbidden, "403 Forbidden: this needs the approver role; token:read has viewer")
}

// The token file is read at each call that sends it (a rotated token is
// picked up); an unusable one is a *TokenFileError before any request.
// Cancel, approve and reject send its trimmed content unchecked.
func TestTokenFile(t *testing.T) {
	d := newTestDaemon(t, daemonOptions{})
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	empty := writeFile(t, "empty", " \n")
	twoLines := writeFile(t, "two-lines", "tok-CANARY-1\nother: x\n")
	for _, c := range []struct{ file, want string }{
		{missing, "open " + missing + ": no such file or directory"},
		{empty, "token file " + empty + " is empty"},
		{twoLines, "token file " + twoLines + " holds more than one line: it must hold the token alone"},
	} {
		c2 := apiclient.New(d.url, c.file, nil)
		_, err1 := c2.Trigger(t.Context(), "net")
		_, err2 := c2.Log(t.Context(), "run-1", false)
		_, err3 := c2.FollowLog(t.Context(), "run-1", &bytes.Buffer{})
		for _, err := range []error{err1, err2, err3} {
			var tfe *apiclient.TokenFileError
			require.ErrorAs(t, err, &tfe)
			require.Equal(t, c.file, tfe.Path)
			require.Equal(t, c.want, err.Error())
		}
	}
	_, err := apiclient.New(d.url, missing, nil).Cancel(t.Context(), "run-1")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = apiclient.New(d.url, missing, nil).Approve(t.Context(), "5e1f00d2a1b2c3d4", "")
	require.ErrorAs(t, err, new(*apiclient.TokenFileError))
	require.Empty(t, d.reqs(), "no request with an unusable token file")

	_, err = apiclient.New(d.url, empty, nil).Cancel(t.Context(), "run-1")
	require.ErrorIs(t, err, apiclient.ErrUnauthorized, "unchecked: the daemon refuses it")
	for _, err := range []error{
		func() error { _, err := apiclient.New(d.url, twoLines, nil).Cancel(t.Context(), "run-1"); return err }(),
		func() error {
			_, err := apiclient.New(d.url, twoLines, nil).Reject(t.Context(), "5e1f00d2a1b2c3d4")
			return err
		}(),
	} {
		require.Error(t, err)
		require.NotContains(t, err.Error(), "CANARY")
	}

	rotating := writeFile(t, "rotating", apiToken)
	c := apiclient.New(d.url, rotating, nil)
	_, err = c.Trigger(t.Context(), "net")
	require.NoError(t, err)
	writeFileAt(t, rotating, "rotated-CANARY\n")
	_, err = c.Trigger(t.Context(), "payments")
	require.ErrorIs(t, err, apiclient.ErrUnauthorized)
	require.Equal(t, "Bearer rotated-CANARY", d.last().Authorization, "read again at each call")
}

// No error of any call shows the token: not a refusal, not a daemon that
// repeats the Authorization header in its reason or answers garbage, not
// a dead daemon.
func TestTokenNeverShown(t *testing.T) {
	const token = "tok-CANARY-e41d"
	tokenFile := writeFile(t, "token", token+"\n")
	echo := func(code int) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth := r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			if code == http.StatusUnauthorized {
				_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid bearer token " + auth, "run_id": auth})
				return
			}
			fmt.Fprintf(w, "%s is not JSON", auth)
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	live := newTestDaemon(t, daemonOptions{})
	redacted := 0 // errors whose reason repeated the token
	for _, u := range []string{echo(http.StatusUnauthorized), echo(http.StatusOK), echo(http.StatusAccepted), dead.URL, live.url} {
		c := apiclient.New(u, tokenFile, nil)
		var errs []error
		call := func(err error) { errs = append(errs, err) }
		call2 := func(_ any, err error) { call(err) }
		call2(c.Trigger(t.Context(), "net"))
		call2(c.GetRun(t.Context(), "run-1"))
		call2(c.Log(t.Context(), "run-1", false))
		call2(c.Log(t.Context(), "run-1", true))
		call2(c.FollowLog(t.Context(), "run-1", &bytes.Buffer{}))
		call2(c.Cancel(t.Context(), "run-1"))
		call2(c.Approve(t.Context(), "5e1f00d2a1b2c3d4", "h1"))
		call2(c.Reject(t.Context(), "77aa00d2a1b2c3d4"))
		failed := 0
		for _, err := range errs {
			if err == nil {
				continue
			}
			failed++
			require.NotContains(t, err.Error(), "CANARY", u)
			var se *apiclient.StatusError
			if errors.As(err, &se) {
				require.NotContains(t, se.Message+se.RunID, "CANARY", u)
				if se.Message == "invalid bearer token Bearer [REDACTED]" {
					redacted++
				}
			}
		}
		require.NotZero(t, failed, u)
	}
	require.Equal(t, 7, redacted, "a repeated token is cut out of every call that sent it")
}

// logsServer serves scripted logs: "r1" (finished, text/plain or SSE),
// "live" (SSE with lines written while the client reads: release lets the
// run end), "cut" (a stream that ends without its end event), "badend"
// and "multi" (an event of two data lines, comments, data without a
// space).
func logsServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/runs/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
		switch r.PathValue("id") {
		case "r1":
			if !sse {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprint(w, "== plan ==\nNo changes.\n")
				return
			}
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "data: == plan ==\n\ndata: No changes.\n\nevent: end\ndata: {\"status\":\"clean\"}\n\n")
		case "live":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "data: == init ==\n\n: keep-alive\n\n")
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprint(w, "data: Error: Unsupported argument\n\nevent: end\ndata: {\"status\":\"errored\"}\n\n")
		case "cut":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "data: partial\n\n")
		case "badend":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: x\n\nevent: end\ndata: clean\n\n")
		case "multi":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ": hello\ndata: a\ndata:b\n\n:\n\nevent: end\ndata: {\"status\":\"drift\"}\n\ndata: after the end\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": "unknown run"}`)
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// The event stream: data lines in order, comments skipped, the verdict of
// the end event; a stream cut short or a bad end event is an error.
func TestEventStream(t *testing.T) {
	ts := logsServer(t, nil)
	c := apiclient.New(ts.URL, "", nil)
	for _, tc := range []struct {
		id, out string
		verdict apiclient.Status
		err     string
	}{
		{"r1", "== plan ==\nNo changes.\n", apiclient.StatusClean, ""},
		{"multi", "a\nb\n", apiclient.StatusDrift, ""},
		{"cut", "partial\n", "", "the stream ended before the run did (daemon restarted?)"},
		{"badend", "x\n", "", "bad end event: invalid character 'c' looking for beginning of value"},
	} {
		var out bytes.Buffer
		verdict, err := c.FollowLog(t.Context(), tc.id, &out)
		require.Equal(t, tc.out, out.String(), tc.id)
		require.Equal(t, tc.verdict, verdict, tc.id)
		if tc.err == "" {
			require.NoError(t, err, tc.id)
		} else {
			require.EqualError(t, err, tc.err, tc.id)
		}
	}
	var out bytes.Buffer
	_, err := c.FollowLog(t.Context(), "cut", &out)
	require.ErrorIs(t, err, apiclient.ErrStreamCut)

	l, err := c.Log(t.Context(), "r1", false)
	require.NoError(t, err)
	defer l.Close()
	require.False(t, l.Events)
	out.Reset()
	verdict, err := l.Copy(&out)
	require.NoError(t, err)
	require.Equal(t, apiclient.Status(""), verdict)
	require.Equal(t, "== plan ==\nNo changes.\n", out.String())
}

// syncWriter signals each write.
type syncWriter struct {
	bytes.Buffer
	wrote chan string
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.wrote <- string(p)
	return w.Buffer.Write(p)
}

// A followed log is written as it comes, and has no time limit: the
// injected client's Timeout does not cut it.
func TestFollowLogLive(t *testing.T) {
	release := make(chan struct{})
	ts := logsServer(t, release)
	c := apiclient.New(ts.URL, "", &http.Client{Timeout: 50 * time.Millisecond})
	out := &syncWriter{wrote: make(chan string, 10)}
	done := make(chan error, 1)
	var verdict apiclient.Status
	go func() {
		var err error
		verdict, err = c.FollowLog(t.Context(), "live", out)
		done <- err
	}()
	require.Equal(t, "== init ==\n", <-out.wrote, "written while the run is in flight")
	time.Sleep(200 * time.Millisecond)
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, apiclient.StatusErrored, verdict)
	require.Equal(t, "== init ==\nError: Unsupported argument\n", out.String())
}

// The run states are the daemon's.
func TestStatusVocabulary(t *testing.T) {
	require.Equal(t, store.RunQueued, apiclient.StatusQueued)
	require.Equal(t, store.RunRunning, apiclient.StatusRunning)
	require.Equal(t, store.RunInterrupted, apiclient.StatusInterrupted)
	require.Equal(t, store.RunCancelled, apiclient.StatusCancelled)
	var r apiclient.Run
	r.Status = apiclient.StatusInterrupted
	require.True(t, r.Finished())
	r.Status = apiclient.StatusClean
	require.True(t, r.Finished())
}
