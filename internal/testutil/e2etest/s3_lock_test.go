package e2etest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/testutil/s3test"
)

// revisionWorkspace is a workspace whose one resource, a
// dwtest_revision_file, keeps its state in srv at key under the S3 lock
// file. Its revision grows with every write; its journal, hold and fail
// switches are files under @ROOT@ named after the workspace.
func revisionWorkspace(srv *s3test.Server, name, key string) string {
	return `terraform {
  required_providers {
    dwtest = { source = "driftwatch/dwtest" }
  }
` + s3Backend(srv, key, "    use_lockfile                = true\n") + `}
resource "dwtest_revision_file" "a" {
  filename          = "@ROOT@/out/` + name + `.txt"
  content           = "v1"
  journal           = "@ROOT@/journal/` + name + `.log"
  hold_while_exists = "@ROOT@/switch/` + name + `.hold"
  fail_if_exists    = "@ROOT@/switch/` + name + `.fail"
}
`
}

// lockFileOf is the lock object use_lockfile keeps next to the state.
type lockFileOf struct {
	ID        string `json:"ID"`
	Operation string `json:"Operation"`
	Who       string `json:"Who"`
}

// remediationOutcome is the part of a remediation's outcome these tests
// read.
type remediationOutcome struct {
	Result       string `json:"result"`
	Reason       string `json:"reason"`
	ApplyStarted bool   `json:"apply_started"`
	StateLock    *struct {
		State string `json:"state"`
		ID    string `json:"id"`
	} `json:"state_lock"`
}

func outcomeOf(t *testing.T, r apiRemediation) remediationOutcome {
	t.Helper()
	var o remediationOutcome
	require.NoError(t, json.Unmarshal(r.Outcome, &o), "%s", r.Outcome)
	return o
}

// revisionOf returns the revision of the dwtest_revision_file in the
// state at key.
func revisionOf(t *testing.T, srv *s3test.Server, key string) float64 {
	t.Helper()
	body, ok := srv.Get(t, key)
	require.True(t, ok)
	var st struct {
		Resources []struct {
			Type      string `json:"type"`
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(body, &st))
	for _, r := range st.Resources {
		if r.Type == "dwtest_revision_file" && len(r.Instances) == 1 {
			v, ok := r.Instances[0].Attributes["revision"].(float64)
			require.True(t, ok, "revision is a number: %v", r.Instances[0].Attributes["revision"])
			return v
		}
	}
	t.Fatalf("no dwtest_revision_file in the state at %s", key)
	return 0
}

// journalCount counts line in the provider's journal of workspace name.
func journalCount(t *testing.T, root, name, line string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "journal", name+".log"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == line {
			n++
		}
	}
	return n
}

// allRuns is d.runs with room for every run a test makes (the API's
// default limit is 50).
func allRuns(d *daemonProc, ws string) []apiRun {
	d.t.Helper()
	var body struct {
		Runs []apiRun `json:"runs"`
	}
	d.getJSON("/api/v1/workspaces/"+ws+"/runs?limit=500", &body)
	return body.Runs
}

// finished reports whether a detection run has its verdict.
func finished(r apiRun) bool {
	return r.Status != "queued" && r.Status != "running"
}

// killRemediation SIGKILLs every process of the one remediation sandbox
// (dwr-*) under workDir: the launcher, bubblewrap, Terraform and its
// provider, as the OOM killer or a kill -9 of the tree would. It returns
// how many it killed.
func killRemediation(t *testing.T, workDir string) int {
	t.Helper()
	var pids []int
	dirs := map[string]bool{}
	eachRunProcess(workDir, func(pid int, rel, _ string) {
		top := strings.Split(rel, string(filepath.Separator))[0]
		if strings.HasPrefix(top, "dwr-") {
			pids = append(pids, pid)
			dirs[top] = true
		}
	})
	require.Len(t, dirs, 1, "one remediation in flight:\n%s", describeTF(workDir))
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

// TestS3RemediationLocks: with the state in S3 under use_lockfile, a
// remediation's apply leaves no lock behind however it ends, and the
// state after a revert is new.
//
//   - revert: the revert of dwtest_revision_file (whose revision every
//     write increments) leaves the fix in the bucket's state with a higher
//     serial, the same lineage, and no lock;
//   - fail: the provider fails the write; the remediation is failed with
//     the provider's error, Terraform, stopping by itself, released the
//     lock (none in the bucket; no lock check was needed), and it is not
//     applied again;
//   - kill: the apply is SIGKILLed mid-write, holding the lock; Terraform
//     cannot release it, so the remediation's reason says the lock is
//     still held, names its ID (the one in the bucket) and says to
//     force-unlock it after checking; driftwatch leaves the lock alone and
//     never applies again over the detections that follow;
//   - cancel: the daemon is stopped (SIGTERM) mid-write, which cancels
//     the apply's context (the API's cancel does not reach a remediation's
//     apply: its run is not the scheduler's): Terraform gets SIGINT, the
//     provider's write is interrupted, the lock is released, and after a
//     restart the drift is not applied again.
//
// No S3 credential appears in any reason or log.
func TestS3RemediationLocks(t *testing.T) {
	parallel(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		srv := s3test.Start(t, s3test.Options{AccessKey: s3CanaryKeyID, SecretKey: s3CanarySecret})
		e.allowHost(t, srv.Endpoint)
		for _, d := range []string{"out", "journal", "switch"} {
			require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
		}
		names := []string{"revert", "fail", "kill", "cancel"}
		keys, before := map[string]string{}, map[string]tfState{}
		for _, n := range names {
			keys[n] = "locks/" + n + ".tfstate"
			dir := e.workspace(t, n, map[string]string{"main.tf": revisionWorkspace(srv, n, keys[n])})
			e.applyS3(t, srv, dir)
			before[n] = stateOf(t, srv, keys[n])
			require.InDelta(t, 1, revisionOf(t, srv, keys[n]), 0, "created: revision 1")
		}
		file := func(n string) string { return filepath.Join(e.root, "out", n+".txt") }
		sw := func(n, kind string) string { return filepath.Join(e.root, "switch", n+"."+kind) }
		touch := func(p string) { require.NoError(t, os.WriteFile(p, nil, 0o644)) }
		// cancel drifts later, once the others are done: its apply is the
		// one the daemon's stop interrupts.
		for _, n := range []string{"revert", "fail", "kill"} {
			require.NoError(t, os.WriteFile(file(n), []byte("hand edit"), 0o644))
		}
		touch(sw("fail", "fail"))
		touch(sw("kill", "hold"))
		touch(sw("cancel", "hold"))

		token := "dw-s3-locks-token-0123456789abcdef0123456789"
		tokenFile := filepath.Join(e.root, "api-token")
		require.NoError(t, os.WriteFile(tokenFile, []byte(token), 0o600))
		listen := freePort(t)
		var ws strings.Builder
		for _, n := range names {
			fmt.Fprintf(&ws, "  - name: %s\n    source: { path: ./%s }\n    secret_env_files: %s\n", n, n, s3Secrets(t, e, n, s3CanaryKeyID, s3CanarySecret))
		}
		cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
allow_sub_minute_schedules: true
defaults:
  schedule: "@every 4s"
  timeout: 3m
  remediation: { mode: auto }
workspaces:
`, listen, tokenFile, filepath.Join(e.root, "data", "dw.db"))+ws.String())
		d := startDaemon(t, cfg, listen)
		final := []string{"applied", "failed", "verification_failed", "refused"}

		// revert: the fix, a new serial, the same lineage, no lock.
		r := d.waitRemediation("revert", 3*time.Minute, final...)
		require.Equal(t, "applied", r.State, "%+v %s", r, r.Outcome)
		require.Equal(t, "v1", mustRead(t, file("revert")))
		after := stateOf(t, srv, keys["revert"])
		require.Equal(t, before["revert"].Lineage, after.Lineage)
		require.Greater(t, after.Serial, before["revert"].Serial, "a revert that changed the object writes a new serial")
		require.Equal(t, "v1", stateAttr(t, srv, keys["revert"], "dwtest_revision_file", "content"))
		require.InDelta(t, 2, revisionOf(t, srv, keys["revert"]), 0, "the remediation's write is in the state")
		_, ok := srv.Get(t, keys["revert"]+".tflock")
		require.False(t, ok, "no lock left behind after a successful apply")
		t.Logf("revert: serial %d -> %d", before["revert"].Serial, after.Serial)

		// fail: the provider's error, the lock released, nothing written.
		r = d.waitRemediation("fail", 3*time.Minute, final...)
		require.Equal(t, "failed", r.State, "%+v %s", r, r.Outcome)
		o := outcomeOf(t, r)
		require.True(t, o.ApplyStarted)
		require.Contains(t, r.Reason, "Injected write failure")
		// Terraform stopped by itself with the provider's error: it
		// released the lock on its way out; no check was needed.
		require.Nil(t, o.StateLock, "%s", r.Outcome)
		_, ok = srv.Get(t, keys["fail"]+".tflock")
		require.False(t, ok, "no lock left behind after a failed apply")
		require.Equal(t, "hand edit", mustRead(t, file("fail")))
		require.Equal(t, 1, journalCount(t, e.root, "fail", "update begin"))
		require.Zero(t, journalCount(t, e.root, "fail", "update end"))
		t.Logf("fail: %s", r.Reason)

		// kill: mid-write, holding the lock; every process of the apply is
		// SIGKILLed (nothing else is applying: revert and fail are done).
		d.eventually("kill's apply holds its write", 3*time.Minute, func() bool {
			return journalCount(t, e.root, "kill", "update begin") == 1
		})
		lockBody, ok := srv.Get(t, keys["kill"]+".tflock")
		require.True(t, ok, "the apply holds the lock")
		var lock lockFileOf
		require.NoError(t, json.Unmarshal(lockBody, &lock), "%s", lockBody)
		require.Equal(t, "OperationTypeApply", lock.Operation)
		require.NotEmpty(t, lock.ID)
		n := killRemediation(t, e.workDir())
		t.Logf("kill: SIGKILLed %d processes of the apply holding lock %s (%s)", n, lock.ID, lock.Who)
		r = d.waitRemediation("kill", time.Minute, final...)
		require.Equal(t, "failed", r.State, "%+v %s", r, r.Outcome)
		o = outcomeOf(t, r)
		require.True(t, o.ApplyStarted)
		require.NotNil(t, o.StateLock, "%s", r.Outcome)
		require.Equal(t, "held", o.StateLock.State, r.Reason)
		require.Equal(t, lock.ID, o.StateLock.ID, "the outcome names the lock in the bucket")
		require.Contains(t, r.Reason, "the state lock is still held (lock ID "+lock.ID+", OperationTypeApply")
		require.Contains(t, r.Reason, "this remediation is not retried")
		require.Contains(t, r.Reason, "make sure no one is applying to this state, then run `terraform force-unlock "+lock.ID+"`")
		t.Logf("kill: %s", r.Reason)
		got, ok := srv.Get(t, keys["kill"]+".tflock")
		require.True(t, ok, "driftwatch never force-unlocks")
		require.Equal(t, string(lockBody), string(got))
		// Never retried: two more detections of the same drift (they plan
		// without the lock) propose nothing and apply nothing.
		seen := len(allRuns(d, "kill"))
		d.eventually("two more detections of kill", 2*time.Minute, func() bool {
			runs := allRuns(d, "kill")
			return len(runs) >= seen+2 && runs[0].Status == "drift" && runs[1].Status == "drift"
		})
		require.Len(t, d.remediations("kill"), 1, "no new proposal for the same drift")
		require.Equal(t, 1, journalCount(t, e.root, "kill", "update begin"), "no second apply")
		require.Equal(t, "hand edit", mustRead(t, file("kill")))
		require.Equal(t, "drift", d.workspaces()["kill"].Status)
		require.Equal(t, before["kill"], stateOf(t, srv, keys["kill"]), "the killed apply wrote no state")
		// fail, over the same detections: not applied again either.
		require.Len(t, d.remediations("fail"), 1)
		require.Equal(t, 1, journalCount(t, e.root, "fail", "update begin"), "no second apply")

		// cancel: drift now; the daemon's stop interrupts the held write.
		require.NoError(t, os.WriteFile(file("cancel"), []byte("hand edit"), 0o644))
		d.eventually("cancel's apply holds its write", 2*time.Minute, func() bool {
			return journalCount(t, e.root, "cancel", "update begin") == 1
		})
		_, ok = srv.Get(t, keys["cancel"]+".tflock")
		require.True(t, ok, "the apply holds the lock")
		stopped := time.Now()
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 60*time.Second))
		t.Logf("cancel: daemon stopped %s after SIGTERM", time.Since(stopped).Round(100*time.Millisecond))
		_, ok = srv.Get(t, keys["cancel"]+".tflock")
		require.False(t, ok, "no lock left behind after a cancelled apply")
		require.Zero(t, journalCount(t, e.root, "cancel", "update end"), "the write was interrupted")
		logs := d.logs.String()

		d = startDaemon(t, cfg, listen)
		r = d.remediations("cancel")[0]
		require.Equal(t, "failed", r.State, "%+v %s", r, r.Outcome)
		o = outcomeOf(t, r)
		require.True(t, o.ApplyStarted)
		if o.StateLock != nil {
			require.Equal(t, "released", o.StateLock.State, r.Reason)
		}
		t.Logf("cancel: %s (state_lock %+v)", r.Reason, o.StateLock)
		// The interrupted write left the object as it was, and Terraform
		// recorded that (the hand edit) in the state as the apply stopped:
		// detection now reports a pending change rather than drift, as
		// after any failed apply that persisted the refreshed state.
		seen = len(allRuns(d, "cancel"))
		d.eventually("two more detections of cancel", 2*time.Minute, func() bool {
			runs := allRuns(d, "cancel")
			return len(runs) >= seen+2 && finished(runs[0]) && finished(runs[1])
		})
		t.Logf("cancel: detections after the restart: %s", d.runs("cancel")[0].Status)
		require.Len(t, d.remediations("cancel"), 1, "no new proposal for the same drift after the restart")
		require.Equal(t, 1, journalCount(t, e.root, "cancel", "update begin"), "no second apply")

		for _, n := range names {
			for _, rem := range d.remediations(n) {
				assertNoS3Canary(t, n+" remediation", rem.Reason+string(rem.Outcome))
			}
		}
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		assertNoS3Canary(t, "daemon logs", logs+d.logs.String())
		entries, err := os.ReadDir(e.workDir())
		require.NoError(t, err)
		require.Empty(t, entries, "run directories (and the lock check's jail) are cleaned up")
	})
}
