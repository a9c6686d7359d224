//go:build faults

package e2etest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/s3test"
)

// The faults suite's state-backend part: a real daemon, real Terraform and
// OpenTofu, a real S3 store (SeaweedFS), and between the two a fault
// proxy (s3test.FaultProxy) that takes the store away, resets, answers
// 500 or answers slowly, at chosen moments of a run. Each test states its
// expectation and checks that nothing was lost or doubled: every run
// recorded once with its verdict, every notification sent once, the state
// in the bucket intact, no lock taken by detection, no process and no run
// directory left.

// bfRun is a run as GET /api/v1/runs/ID returns it.
type bfRun struct {
	ID              string   `json:"id"`
	Status          string   `json:"status"`
	Trigger         string   `json:"trigger"`
	Error           string   `json:"error"`
	DurationSeconds *float64 `json:"duration_seconds"`
	Counts          struct {
		Drift, Pending, Forbidden int
	} `json:"counts"`
}

// bfStore is one tool's store and its workspaces, each behind a fault
// proxy of its own.
type bfStore struct {
	e       *tfEnv
	srv     *s3test.Server
	proxies map[string]*s3test.FaultProxy
	keys    map[string]string
	before  map[string]tfState
	secrets map[string]string
	// setup is how many requests each proxy saw during the setup (the
	// apply that created the state).
	setup map[string]int
}

// newBFStore starts the store and, per name, a proxy and a workspace
// (dwtest_file.a and local_file.b, state at faults/NAME.tfstate with
// use_lockfile) whose backend endpoint is the proxy; each is applied (the
// proxy passing) and then drifted by hand: a's content changed.
func newBFStore(t *testing.T, e *tfEnv, names ...string) *bfStore {
	t.Helper()
	// The faults are injected at a run's Nth request for the state (init
	// reads it twice, then the plan): every run inits, as without the fast
	// paths, so that the counts hold for every run, not only the first.
	e.fastPathsOff = true
	// The faults are the store's, as Terraform meets them on the host's
	// network: through pasta's forwarding (sandbox_host_ports) a refused
	// connection reaches Terraform as a reset, not as "connection refused".
	e.network = "host"
	fs := &bfStore{e: e, srv: s3test.Start(t, s3test.Options{AccessKey: s3CanaryKeyID, SecretKey: s3CanarySecret}),
		proxies: map[string]*s3test.FaultProxy{}, keys: map[string]string{}, before: map[string]tfState{}, secrets: map[string]string{}, setup: map[string]int{}}
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))
	for _, n := range names {
		px := s3test.StartFaultProxy(t, fs.srv)
		via := *fs.srv // the same store, reached through the proxy
		via.Endpoint = px.URL
		e.allowHost(t, px.URL)
		key := "faults/" + n + ".tfstate"
		dir := e.workspace(t, n, map[string]string{"main.tf": s3Workspace(&via, n, key, "    use_lockfile                = true\n")})
		e.applyS3(t, fs.srv, dir)
		fs.proxies[n], fs.keys[n], fs.before[n], fs.setup[n] = px, key, stateOf(t, fs.srv, key), len(px.Requests())
		fs.secrets[n] = s3Secrets(t, e, n, s3CanaryKeyID, s3CanarySecret)
		fs.drift(t, n, "hand edit")
	}
	return fs
}

// drift changes workspace n's managed file a by hand.
func (fs *bfStore) drift(t *testing.T, n, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(fs.file(n), []byte(content), 0o644))
}

func (fs *bfStore) file(n string) string { return filepath.Join(fs.e.root, "out", n+"-a.txt") }

// workspaces is the config's workspaces: entries, each with extra keys.
func (fs *bfStore) workspaces(extra map[string]string) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(fs.keys)) {
		fmt.Fprintf(&b, "  - name: %s\n    source: { path: ./%s }\n    secret_env_files: %s\n", n, n, fs.secrets[n])
		if x := extra[n]; x != "" {
			b.WriteString("    " + x + "\n")
		}
	}
	return b.String()
}

// noLeftovers asserts that no Terraform or provider process and no run
// directory is left under the daemon's work dir, and no lock file in the
// bucket: detection never takes the lock.
func (fs *bfStore) noLeftovers(t *testing.T, names ...string) {
	t.Helper()
	require.Empty(t, processesUnder(t, fs.e.workDir()), "no process left: %s", describeTF(fs.e.workDir()))
	entries, err := os.ReadDir(fs.e.workDir())
	require.NoError(t, err)
	require.Empty(t, entries, "no run directory left")
	for _, n := range names {
		_, locked := fs.srv.Get(t, fs.keys[n]+".tflock")
		require.False(t, locked, "no lock left on %s", n)
	}
}

// detectionWroteNothing asserts that no request through n's proxy since
// request from wrote anything: detection plans with -lock=false, so it
// never writes the lock file, the state or anything else.
func (fs *bfStore) detectionWroteNothing(t *testing.T, n string, from int) {
	t.Helper()
	for _, r := range fs.proxies[n].Requests()[from:] {
		require.Contains(t, []string{http.MethodGet, http.MethodHead}, r.Method, "detection sent %s %s", r.Method, r.Key)
	}
}

// daemon starts a daemon on the store's workspaces with webhook alerts and
// an API token, and returns it with the token. Each workspace runs once at
// start; the schedule (February 29th) has no slot during a test, so every
// later run is one the test triggers through the API.
func (fs *bfStore) daemon(t *testing.T, defaults string, extra map[string]string) (*daemonProc, string, *notifytest.WebhookServer) {
	t.Helper()
	e := fs.e
	as := newAlertServers(t, e)
	token := "dw-faults-api-token-71c-0123456789abcdef0123456789"
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
	listen := freePort(t)
	cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
%s
alerts:
  default_notifiers: [hook]
defaults:
  schedule: "0 4 29 2 *"
%s
workspaces:
%s`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"), as.notifiers, defaults, fs.workspaces(extra)))
	return startDaemonEnv(t, cfg, listen, as.env), token, as.hook
}

// bfWaitRun waits for run id to end and returns it.
func bfWaitRun(t *testing.T, d *daemonProc, id string, within time.Duration) bfRun {
	t.Helper()
	var r bfRun
	d.eventually("run "+id+" ends", within, func() bool {
		d.getJSON("/api/v1/runs/"+id, &r)
		return r.Status != "queued" && r.Status != "running"
	})
	return r
}

// bfFirstRun waits for ws's first run (the one at start) to end.
func bfFirstRun(t *testing.T, d *daemonProc, ws string, within time.Duration) bfRun {
	t.Helper()
	var id string
	d.eventually(ws+"'s first run", within, func() bool {
		rs := d.runs(ws)
		if len(rs) == 1 {
			id = rs[0].ID
		}
		return id != ""
	})
	return bfWaitRun(t, d, id, within)
}

// bfHookEvents returns the webhook events for ws's incidents, in order, as
// "class:event" (remediation announcements as "class:remediation:result"),
// after failing on a duplicate delivery.
func bfHookEvents(t *testing.T, hook *notifytest.WebhookServer, ws string) []string {
	t.Helper()
	var out []string
	for _, dl := range hook.Deliveries() {
		require.True(t, dl.Verified, dl.Reason)
		require.False(t, dl.Duplicate, "a notification delivered twice: %s", dl.Body)
		if dl.Payload.Incident.Workspace != ws {
			continue
		}
		ev := dl.Payload.Incident.Class + ":" + dl.Payload.Event
		if dl.Payload.Remediation != nil {
			ev += ":" + dl.Payload.Remediation.Result
		}
		out = append(out, ev)
	}
	return out
}

// bfRunStatuses is ws's runs, oldest first, as "trigger:status".
func bfRunStatuses(d *daemonProc, ws string) []string {
	rs := d.runs(ws)
	out := make([]string, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r.Trigger + ":" + r.Status
	}
	return out
}

// TestFaultsS3DownMidPlan: the state backend goes away in the
// middle of a detection run, once init has read the state, at the plan's
// first request for it (from then on connections are refused).
// Expectation: the run is errored (not clean, not drift) with a reason
// that says the state backend could not be reached, names no credential
// and is the plan's; the drift incident the previous run opened stays
// open, untouched (an errored run says nothing about drift: no resolve, no
// update); no Terraform process and no run directory is left; detection
// wrote nothing to the bucket; and once the backend is back, the next run
// finds the same drift, with no notification sent twice.
func TestFaultsS3DownMidPlan(t *testing.T) {
	parallelBesideSoak(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		fs := newBFStore(t, e, "ws")
		px := fs.proxies["ws"]
		d, token, hook := fs.daemon(t, "  timeout: 2m", nil)

		r := bfFirstRun(t, d, "ws", 90*time.Second)
		require.Equal(t, "drift", r.Status, r.Error)
		d.eventually("the drift incident opens", 30*time.Second, func() bool { return len(bfHookEvents(t, hook, "ws")) == 1 })
		require.Equal(t, []string{"drift:open"}, bfHookEvents(t, hook, "ws"))

		// init reads the state object twice (HEAD, GET); the plan's first
		// request for it starts the outage.
		px.MustSet(t, s3test.Fault{Kind: s3test.Refuse, KeySuffix: fs.keys["ws"], After: 2})
		started := time.Now()
		r = bfWaitRun(t, d, triggerRun(t, d, "ws", token), 2*time.Minute)
		t.Logf("errored after %s: %s", time.Since(started).Round(100*time.Millisecond), r.Error)
		require.Equal(t, "errored", r.Status, "%+v", r)
		require.True(t, strings.HasPrefix(r.Error, "plan: the state backend could not be reached: S3 "), "the plan's, and says why: %q", r.Error)
		require.Contains(t, r.Error, "connection refused")
		assertNoS3Canary(t, "the run's error", r.Error)
		require.NotContains(t, r.Error, "http://", "no URL in the reason")
		fs.noLeftovers(t, "ws")

		px.MustSet(t, s3test.Fault{})
		r = bfWaitRun(t, d, triggerRun(t, d, "ws", token), 90*time.Second)
		require.Equal(t, "drift", r.Status, r.Error)
		require.Equal(t, 1, r.Counts.Drift)
		fs.noLeftovers(t, "ws")
		fs.detectionWroteNothing(t, "ws", fs.setup["ws"])
		require.Equal(t, fs.before["ws"], stateOf(t, fs.srv, fs.keys["ws"]), "the state is untouched")

		require.Equal(t, []string{"initial:drift", "manual:errored", "manual:drift"}, bfRunStatuses(d, "ws"), "every run recorded once")
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		require.Equal(t, []string{"drift:open"}, bfHookEvents(t, hook, "ws"), "the incident stayed open: nothing resolved, nothing sent twice")
		assertNoS3Canary(t, "daemon log", d.logs.String())
	})
}

// TestFaultsS3DownMidApply: in auto mode, the state backend goes away in
// the middle of a remediation's apply: after Terraform took the lock and
// reverted the resource, when it goes to release the lock (from then on
// connections are refused, until the test brings the backend back after
// the remediation ended). Expectation: the remediation is failed, apply
// started, with a reason that says the state backend could not be reached
// and names no credential; the resource is reverted but the state in the
// bucket is the one from before (a revert leaves it byte-identical, so
// Terraform never writes it); the apply's lock file is left in the bucket
// (Terraform could not delete it: the backend was down), holding an apply
// lock; the remediation is not retried: the next detection, after the
// backend is back and the same drift was made again by hand, proposes and
// applies nothing; no process and no run directory is left; each
// notification is sent once.
func TestFaultsS3DownMidApply(t *testing.T) {
	parallelBesideSoak(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		fs := newBFStore(t, e, "ws")
		px, key := fs.proxies["ws"], fs.keys["ws"]
		// Detection never touches the lock file. The remediation's plan
		// takes and releases the lock (PUT, then GET and DELETE of
		// .tflock); the apply does the same, and its GET of the lock file
		// before the DELETE, the second GET, starts the outage.
		px.MustSet(t, s3test.Fault{Kind: s3test.Refuse, Method: http.MethodGet, KeySuffix: ".tflock", After: 1})
		d, token, hook := fs.daemon(t, "  timeout: 3m\n  remediation: { mode: auto, lock_timeout: 0s }", nil)

		rem := d.waitRemediation("ws", 4*time.Minute, "applied", "failed", "refused", "verification_failed")
		t.Logf("remediation: %s: %s\noutcome %s", rem.State, rem.Reason, rem.Outcome)
		require.Equal(t, "failed", rem.State, "%s: %s", rem.Reason, rem.Outcome)
		var outcome struct {
			ApplyStarted bool `json:"apply_started"`
			StateLock    *struct {
				State, ID, Reason string
			} `json:"state_lock"`
		}
		require.NoError(t, json.Unmarshal(rem.Outcome, &outcome))
		require.True(t, outcome.ApplyStarted, "%s", rem.Outcome)
		require.Contains(t, rem.Reason, "the state backend could not be reached: S3 GetObject", "the reason says why: %q", rem.Reason)
		require.Contains(t, rem.Reason, "connection refused")
		assertNoS3Canary(t, "the remediation's reason", rem.Reason)
		assertNoS3Canary(t, "the remediation's outcome", string(rem.Outcome))

		// Terraform reverted the resource; the state needed no write.
		require.Equal(t, "v1", mustRead(t, fs.file("ws")), "the apply reverted the file before the outage")
		require.Equal(t, fs.before["ws"], stateOf(t, fs.srv, key))
		for _, r := range px.Requests()[fs.setup["ws"]:] {
			require.False(t, r.Method == http.MethodPut && strings.HasSuffix(r.Key, ".tfstate"), "no state write")
		}
		lockBody, locked := fs.srv.Get(t, key+".tflock")
		require.True(t, locked, "the apply's lock is left: the backend was down when Terraform released it")
		var lock struct{ ID, Operation string }
		require.NoError(t, json.Unmarshal(lockBody, &lock), "%s", lockBody)
		require.NotEmpty(t, lock.ID)
		require.Equal(t, "OperationTypeApply", lock.Operation)
		if outcome.StateLock != nil {
			// The lock probe after a failed apply (engine.LockCheck),
			// run while the backend is still down: it cannot know.
			t.Logf("lock probe: %+v", *outcome.StateLock)
			require.Contains(t, []string{"unknown", "held"}, outcome.StateLock.State)
			if outcome.StateLock.State == "held" {
				require.Equal(t, lock.ID, outcome.StateLock.ID)
			}
		} else {
			t.Logf("no lock probe in this build: the reason does not name lock %s", lock.ID)
		}

		// Everything the failure set off ends (the verification detection
		// too: it starts only after the remediation is recorded failed, so
		// wait for its record) before the backend comes back.
		d.eventually("the verification recorded and no run in flight", 2*time.Minute, func() bool {
			verified := false
			for _, r := range d.runs("ws") {
				if r.Status == "queued" || r.Status == "running" {
					return false
				}
				verified = verified || r.Trigger == "verify"
			}
			return verified
		})
		fs.noLeftovers(t)
		runsBefore := bfRunStatuses(d, "ws")
		t.Logf("runs: %v", runsBefore)

		// Back, and the same drift again: detected, not remediated again.
		px.MustSet(t, s3test.Fault{})
		fs.drift(t, "ws", "hand edit")
		from := len(px.Requests())
		r := bfWaitRun(t, d, triggerRun(t, d, "ws", token), 90*time.Second)
		require.Equal(t, "drift", r.Status, "%s\n%s", r.Error, logSnapshot(t, d, r.ID, token))
		time.Sleep(5 * time.Second) // an auto apply would be queued at once
		require.Len(t, d.remediations("ws"), 1, "the failed remediation is not proposed again")
		require.Equal(t, append(runsBefore, "manual:drift"), bfRunStatuses(d, "ws"), "no apply after the detection")
		require.Equal(t, "hand edit", mustRead(t, fs.file("ws")))
		fs.detectionWroteNothing(t, "ws", from)
		got, _ := fs.srv.Get(t, key+".tflock")
		require.Equal(t, string(lockBody), string(got), "nothing touched the leftover lock")

		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		evs := bfHookEvents(t, hook, "ws")
		t.Logf("notifications: %v", evs)
		require.Equal(t, 1, bfCount(evs, "drift:open"), "one incident: %v", evs)
		require.Equal(t, 1, bfCount(evs, "drift:remediation:failed"), "the failure announced once: %v", evs)
		assertNoS3Canary(t, "daemon log", d.logs.String())
	})
}

// bfCount is how many times s is in list.
func bfCount(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestFaultsS3Errors500: the store answers 500 InternalError. burst gets
// a burst of three (on its first request for the state object and the two
// retries after it), fewer than the five attempts the backend's SDK makes;
// down gets 500 for every request. Expectation: burst's run survives the burst with
// the right verdict (drift, the one drifted resource); down's run is
// errored well within the workspace's timeout (not a timeout) with a
// reason that says the state backend failed with 500 and names no
// credential; once down's store answers again its next run finds the
// drift; every run recorded once, no process, run directory or lock left.
func TestFaultsS3Errors500(t *testing.T) {
	parallelBesideSoak(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		fs := newBFStore(t, e, "burst", "down")
		fs.proxies["burst"].MustSet(t, s3test.Fault{Kind: s3test.Error500, N: 3, KeySuffix: ".tfstate"})
		fs.proxies["down"].MustSet(t, s3test.Fault{Kind: s3test.Error500})
		d, token, _ := fs.daemon(t, "  timeout: 90s", nil)

		r := bfFirstRun(t, d, "burst", 2*time.Minute)
		require.Equal(t, "drift", r.Status, r.Error)
		require.Equal(t, 1, r.Counts.Drift)
		require.Equal(t, 3, fs.proxies["burst"].Injected(), "the burst was injected")

		r = bfFirstRun(t, d, "down", 2*time.Minute)
		require.Equal(t, "errored", r.Status, "%+v", r)
		require.NotNil(t, r.DurationSeconds)
		t.Logf("down errored in %.1fs after %d answers of 500: %s", *r.DurationSeconds, fs.proxies["down"].Injected(), r.Error)
		require.Less(t, *r.DurationSeconds, 90.0, "within the timeout")
		require.NotContains(t, r.Error, "timed out")
		require.Regexp(t, `^init: the state backend failed: S3 \w+ answered 500 Internal(Server)?Error after \d+ attempts`, r.Error)
		assertNoS3Canary(t, "the run's error", r.Error)
		fs.noLeftovers(t, "burst", "down")

		fs.proxies["down"].MustSet(t, s3test.Fault{})
		r = bfWaitRun(t, d, triggerRun(t, d, "down", token), 90*time.Second)
		require.Equal(t, "drift", r.Status, r.Error)
		fs.noLeftovers(t, "burst", "down")
		for _, n := range []string{"burst", "down"} {
			fs.detectionWroteNothing(t, n, fs.setup[n])
			require.Equal(t, fs.before[n], stateOf(t, fs.srv, fs.keys[n]))
		}
		require.Equal(t, []string{"initial:drift"}, bfRunStatuses(d, "burst"))
		require.Equal(t, []string{"initial:errored", "manual:drift"}, bfRunStatuses(d, "down"))
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		assertNoS3Canary(t, "daemon log", d.logs.String())
	})
}

// TestFaultsS3Slow: the store answers slowly. slow's every answer is
// held back a second (a run makes about ten requests), well within its
// timeout; stuck's every answer is held back longer than its whole
// timeout (15s). Expectation: slow's run has the right verdict (drift);
// stuck's run is errored as a timeout ("run timed out after 15s"), its
// Terraform processes gone (interrupted, then killed after the grace) and
// its run directory removed, and it took no lock; once the store answers
// promptly again, stuck's next run finds the drift.
func TestFaultsS3Slow(t *testing.T) {
	parallelBesideSoak(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		fs := newBFStore(t, e, "slow", "stuck")
		fs.proxies["slow"].MustSet(t, s3test.Fault{Kind: s3test.Slow, Delay: time.Second})
		fs.proxies["stuck"].MustSet(t, s3test.Fault{Kind: s3test.Slow, Delay: 5 * time.Minute})
		d, token, _ := fs.daemon(t, "  timeout: 90s", map[string]string{"stuck": "timeout: 15s"})

		r := bfFirstRun(t, d, "stuck", 90*time.Second)
		require.Equal(t, "errored", r.Status, "%+v", r)
		require.Contains(t, r.Error, "run timed out after 15s")
		assertNoS3Canary(t, "the run's error", r.Error)
		t.Logf("stuck: %s (%d requests held)", r.Error, fs.proxies["stuck"].Injected())

		r = bfFirstRun(t, d, "slow", 2*time.Minute)
		require.Equal(t, "drift", r.Status, r.Error)
		require.Equal(t, 1, r.Counts.Drift)
		require.NotNil(t, r.DurationSeconds)
		t.Logf("slow: drift in %.1fs, %d answers held back 1s", *r.DurationSeconds, fs.proxies["slow"].Injected())
		require.GreaterOrEqual(t, fs.proxies["slow"].Injected(), 5, "the answers were slow")
		fs.noLeftovers(t, "slow", "stuck")

		fs.proxies["stuck"].MustSet(t, s3test.Fault{})
		r = bfWaitRun(t, d, triggerRun(t, d, "stuck", token), 90*time.Second)
		require.Equal(t, "drift", r.Status, r.Error)
		fs.noLeftovers(t, "slow", "stuck")
		for _, n := range []string{"slow", "stuck"} {
			fs.detectionWroteNothing(t, n, fs.setup[n])
			require.Equal(t, fs.before[n], stateOf(t, fs.srv, fs.keys[n]))
		}
		require.Equal(t, []string{"initial:errored", "manual:drift"}, bfRunStatuses(d, "stuck"))
		require.Equal(t, []string{"initial:drift"}, bfRunStatuses(d, "slow"))
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		assertNoS3Canary(t, "daemon log", d.logs.String())
	})
}

// TestFaultsS3Proxy: the fault proxy the tests above rely on does what
// they say, to a signed S3 client: it passes requests through untouched
// (the signature, which covers the host, still verifies); Error500 with N
// answers exactly N requests, only those its KeySuffix and Method select,
// after letting After of them pass; Reset answers nothing; a Refuse
// triggered by a request takes the whole endpoint down from that request
// on, and the same URL works again after the next Set; Slow holds each
// answer back; the store behind it changes only for requests forwarded.
func TestFaultsS3Proxy(t *testing.T) {
	parallelBesideSoak(t)
	srv := s3test.Start(t, s3test.Options{})
	px := s3test.StartFaultProxy(t, srv)
	via := *srv
	via.Endpoint = px.URL
	do := func(method, key string, body []byte) int {
		code, _, err := via.Do(method, key, body, nil)
		if err != nil {
			return 0
		}
		return code
	}
	require.Equal(t, http.StatusOK, do(http.MethodPut, "a/x.tfstate", []byte("v1")))
	require.Equal(t, http.StatusOK, do(http.MethodGet, "a/x.tfstate", nil))

	px.MustSet(t, s3test.Fault{Kind: s3test.Error500, N: 2, KeySuffix: ".tfstate", Method: http.MethodPut, After: 1})
	require.Equal(t, http.StatusOK, do(http.MethodGet, "a/x.tfstate", nil), "another method passes")
	require.Equal(t, http.StatusOK, do(http.MethodPut, "a/x.tfstate.tflock", []byte("l")), "another key passes")
	require.Equal(t, http.StatusOK, do(http.MethodPut, "a/x.tfstate", []byte("v2")), "After: the first passes")
	require.Equal(t, http.StatusInternalServerError, do(http.MethodPut, "a/x.tfstate", []byte("v3")))
	require.Equal(t, http.StatusInternalServerError, do(http.MethodPut, "a/x.tfstate", []byte("v4")))
	require.Equal(t, http.StatusOK, do(http.MethodPut, "a/x.tfstate", []byte("v5")), "N: then it passes again")
	require.Equal(t, 2, px.Injected())
	body, _ := srv.Get(t, "a/x.tfstate")
	require.Equal(t, "v5", string(body), "the 500s never reached the store")

	px.MustSet(t, s3test.Fault{Kind: s3test.Reset, KeySuffix: ".tflock"})
	require.Zero(t, do(http.MethodGet, "a/x.tfstate.tflock", nil), "reset: no answer")
	require.Equal(t, http.StatusOK, do(http.MethodGet, "a/x.tfstate", nil))

	px.MustSet(t, s3test.Fault{Kind: s3test.Refuse, Method: http.MethodDelete})
	require.Equal(t, http.StatusOK, do(http.MethodGet, "a/x.tfstate", nil), "up until the trigger")
	require.Zero(t, do(http.MethodDelete, "a/x.tfstate.tflock", nil), "the trigger is reset")
	_, _, err := via.Do(http.MethodGet, "a/x.tfstate", nil, nil)
	require.ErrorContains(t, err, "connection refused", "then the endpoint is down for every request")
	_, ok := srv.Get(t, "a/x.tfstate.tflock")
	require.True(t, ok, "the DELETE never reached the store")
	px.MustSet(t, s3test.Fault{})
	require.Equal(t, http.StatusOK, do(http.MethodGet, "a/x.tfstate", nil), "back on the same URL")

	px.MustSet(t, s3test.Fault{Kind: s3test.Slow, Delay: 700 * time.Millisecond})
	start := time.Now()
	require.Equal(t, http.StatusOK, do(http.MethodGet, "a/x.tfstate", nil))
	require.GreaterOrEqual(t, time.Since(start), 700*time.Millisecond)

	byMethod := px.CountByMethod()
	require.Equal(t, 6, byMethod[http.MethodPut], "%v", byMethod)
	require.Equal(t, 1, byMethod[http.MethodDelete], "%v", byMethod)
	require.Equal(t, px.Count(http.MethodGet, ""), byMethod[http.MethodGet])
}
