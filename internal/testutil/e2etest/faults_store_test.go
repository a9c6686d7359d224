//go:build faults

package e2etest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, to inspect the store file

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// The store fault tests inject real storage faults under a real daemon:
// the store lives on a tmpfs of its own, filled up with a filler file
// (disk full) or remounted read-only, and the daemon must report the
// fault, keep serving reads, lose and double nothing (runs, verdicts,
// incidents, notifications), and carry on when the storage is back. They
// need root (mount) and skip without it, but for the corrupt-file one.

// storeFaultWorkspace drifts when out/a.txt is edited by hand; its plan
// takes about 3 s (the sleep), so a fault can land while it runs.
const storeFaultWorkspace = providers + `
data "dwtest_sleep" "slow" {
  duration = "3s"
}
resource "dwtest_file" "a" {
  filename = "@ROOT@/out/a.txt"
  content  = "v1"
}
`

// storeFaultMount mounts a tmpfs of size (e.g. "16m") on dir, unmounted when
// the test ends (after the daemons it started, whose cleanups run first).
func storeFaultMount(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("store fault tests mount a tmpfs: they need root")
	}
	require.NoError(t, os.MkdirAll(dir, 0o700))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount tmpfs: %s", out)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// storeFaultRemount remounts the tmpfs on dir with opt ("ro" or "rw").
func storeFaultRemount(t *testing.T, dir, opt string) {
	t.Helper()
	out, err := exec.Command("mount", "-o", "remount,"+opt, dir).CombinedOutput()
	require.NoError(t, err, "remount %s %s: %s", opt, dir, out)
}

// storeFaultFill fills the file system of dir with a filler file until it
// refuses another byte (ENOSPC) and returns the filler's path.
// storeFaultChattr sets or clears dir's immutable attribute (attr "+i"
// or "-i").
func storeFaultChattr(t *testing.T, dir, attr string) {
	t.Helper()
	out, err := exec.Command("chattr", attr, dir).CombinedOutput()
	require.NoError(t, err, "chattr %s %s: %s", attr, dir, out)
}

func storeFaultFill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	defer f.Close()
	for _, chunk := range [][]byte{make([]byte, 1<<20), make([]byte, 4096), make([]byte, 1)} {
		for {
			if _, err := f.Write(chunk); err != nil {
				require.ErrorIs(t, err, syscall.ENOSPC)
				break
			}
		}
	}
	return p
}

// storeFaultTrigger queues a run of ws and returns its id.
func storeFaultTrigger(t *testing.T, d *daemonProc, ws, token string) string {
	t.Helper()
	code, body := postBody(t, d, "/api/v1/workspaces/"+ws+"/runs", token)
	require.Equal(t, http.StatusAccepted, code, body)
	var r struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	require.NotEmpty(t, r.RunID)
	return r.RunID
}

func (d *daemonProc) storeFaultRun(id string) apiRun {
	d.t.Helper()
	var r apiRun
	d.getJSON("/api/v1/runs/"+id, &r)
	return r
}

// storeFaultPending is GET /api/v1/notifiers: pending messages per notifier.
func (d *daemonProc) storeFaultPending() map[string]int {
	d.t.Helper()
	var body struct {
		Notifiers []struct {
			Name    string `json:"name"`
			Pending int    `json:"pending"`
			Dead    int    `json:"dead"`
		} `json:"notifiers"`
	}
	d.getJSON("/api/v1/notifiers", &body)
	out := map[string]int{}
	for _, n := range body.Notifiers {
		require.Zero(d.t, n.Dead, "notifier %s gave up on a message", n.Name)
		out[n.Name] = n.Pending
	}
	return out
}

// storeFaultServesReads checks that the daemon is alive and answers reads from
// the store: health, the status page, the workspace list and a run.
func (d *daemonProc) storeFaultServesReads(ws, runID, wantRunStatus string) {
	d.t.Helper()
	for _, p := range []string{"/healthz", "/", "/workspaces/" + ws} {
		resp, err := http.Get(d.base + p)
		require.NoError(d.t, err)
		resp.Body.Close()
		require.Equal(d.t, http.StatusOK, resp.StatusCode, p)
	}
	require.Contains(d.t, d.workspaces(), ws)
	require.Equal(d.t, wantRunStatus, d.storeFaultRun(runID).Status)
}

// storeFaultLogCount counts the daemon's log lines containing s.
func (d *daemonProc) storeFaultLogCount(s string) int { return strings.Count(d.logs.String(), s) }

// storeFaultRecords is what the store file holds, read after the daemon
// stopped: PRAGMA integrity_check's answer, every run (id -> status), the
// incidents (key -> state) and the delivered outbox rows per notifier.
type storeFaultRecords struct {
	integrity string
	runs      map[string]string
	incidents map[string]string
	delivered map[string][]string // notifier -> message ids, in enqueue order
	pending   int
}

// storeFaultReadStore opens the store file read-only (immutable: the daemon
// has stopped, and the check itself must not write a byte) and reads it.
func storeFaultReadStore(t *testing.T, path string) storeFaultRecords {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path, OmitHost: true, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite", u.String())
	require.NoError(t, err)
	defer db.Close()
	rec := storeFaultRecords{runs: map[string]string{}, incidents: map[string]string{}, delivered: map[string][]string{}}
	var lines []string
	rows, err := db.Query("PRAGMA integrity_check")
	require.NoError(t, err)
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		lines = append(lines, l)
	}
	require.NoError(t, rows.Err())
	rec.integrity = strings.Join(lines, "; ")
	query := func(q string, fn func(a, b string)) {
		rows, err := db.Query(q)
		require.NoError(t, err, q)
		defer rows.Close()
		for rows.Next() {
			var a, b string
			require.NoError(t, rows.Scan(&a, &b))
			fn(a, b)
		}
		require.NoError(t, rows.Err())
	}
	query("SELECT id, status FROM runs", func(id, st string) { rec.runs[id] = st })
	query("SELECT key, state FROM incidents", func(k, st string) { rec.incidents[k] = st })
	query("SELECT notifier, id FROM outbox WHERE delivered_at IS NOT NULL ORDER BY seq", func(n, id string) {
		rec.delivered[n] = append(rec.delivered[n], id)
	})
	require.NoError(t, db.QueryRow("SELECT count(*) FROM outbox WHERE delivered_at IS NULL").Scan(&rec.pending))
	return rec
}

// storeFaultEnv is one daemon on a store on its own tmpfs, with a
// drifting workspace and local Slack and webhook receivers.
type storeFaultEnv struct {
	e       *tfEnv
	as      *alertServers
	dataDir string
	store   string
	token   string
	cfg     string
	listen  string
}

func newStoreFaultEnv(t *testing.T, e *tfEnv) *storeFaultEnv {
	t.Helper()
	f := &storeFaultEnv{e: e, dataDir: filepath.Join(e.root, "data"), listen: freePort(t), token: "dw-api-token-faults-7c1e-0123456789abcdef0123456789"}
	storeFaultMount(t, f.dataDir, "16m")
	f.store = filepath.Join(f.dataDir, "dw.db")
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, "out"), 0o755))
	ws := e.workspace(t, "payments", map[string]string{"main.tf": storeFaultWorkspace})
	e.apply(t, ws)
	f.as = newAlertServers(t, e)
	tokenFile := filepath.Join(e.root, "api-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(f.token+"\n"), 0o600))
	// Never due during a test: the first run is the initial one, every
	// other is triggered by the test, so each run in the history is one
	// the test asked for.
	f.cfg = e.config(t, fmt.Sprintf(`
server: { listen: "%s", token_file: %s }
store: { path: %s }
%s
alerts:
  default_notifiers: [slack-oncall, hook]
workspaces:
  - name: payments
    source: { path: ./payments }
    schedule: "@every 24h"
`, f.listen, tokenFile, f.store, f.as.notifiers))
	return f
}

func (f *storeFaultEnv) start(t *testing.T) *daemonProc {
	t.Helper()
	return startDaemonEnv(t, f.cfg, f.listen, f.as.env)
}

// edit sets out/a.txt: "v1" is clean, anything else drift.
func (f *storeFaultEnv) edit(t *testing.T, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(f.e.root, "out", "a.txt"), []byte(content), 0o644))
}

// awaitRun waits for run id to end with status.
func (f *storeFaultEnv) awaitRun(d *daemonProc, id, status string, within time.Duration) {
	d.t.Helper()
	d.eventually("run "+id+" "+status, within, func() bool {
		st := d.storeFaultRun(id).Status
		require.NotContains(d.t, []string{"errored", "cancelled"}, st, "run %s", id)
		return st == status
	})
}

// stopAndReconcile records the API's view of the history, stops the daemon
// and checks the store file against it and against what the receivers
// got: integrity ok; the same runs with the same statuses; nothing left
// pending; every delivered webhook message received exactly once and no
// other; one Slack parent per drift incident and one reply per later
// message. wantRuns are the statuses of every run, oldest first.
func (f *storeFaultEnv) stopAndReconcile(t *testing.T, d *daemonProc, wantRuns []string) {
	t.Helper()
	api := d.runs("payments")
	require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
	rec := storeFaultReadStore(t, f.store)
	require.Equal(t, "ok", rec.integrity)

	apiRuns := map[string]string{}
	var statuses []string
	for _, r := range api {
		apiRuns[r.ID] = r.Status
		statuses = append(statuses, r.Status)
	}
	slices.Reverse(statuses) // the API lists newest first
	require.Equal(t, wantRuns, statuses, "every run recorded once, with its verdict")
	require.Equal(t, apiRuns, rec.runs, "the API's runs are the store's")

	require.Zero(t, rec.pending, "every notification delivered")
	var hookIDs []string
	for _, dl := range f.as.hook.Deliveries() {
		require.True(t, dl.Verified, dl.Reason)
		require.False(t, dl.Duplicate, "webhook message %s delivered twice", dl.Payload.ID)
		hookIDs = append(hookIDs, dl.Payload.ID+"/hook")
	}
	require.Equal(t, rec.delivered["hook"], hookIDs, "the webhook got exactly the messages the store marks delivered, in order")
	require.Len(t, rec.delivered["slack-oncall"], len(hookIDs), "both notifiers got the same messages")
	parents := f.as.slack.Messages("C0DRIFT01")
	require.Len(t, parents, 1, "one incident, one Slack parent")
	require.Len(t, f.as.slack.Replies("C0DRIFT01", parents[0].TS), len(hookIDs)-1, "one reply per later message")
	require.Len(t, rec.incidents, 1)
}

// TestFaultsStoreDiskFull fills the store's file system while the daemon
// runs: once while a run plans (its verdict's write fails) and once while
// a notification is in flight (the outbox's write after the delivery
// fails).
//
// Expectation: every failed write is reported (an error log line naming
// the store failure, driftwatch_store_write_failing 1 and
// driftwatch_store_write_errors_total rising); the daemon stays up and
// serves reads (status page, API) from what is stored; the run keeps its
// verdict and its workspace (a second trigger is refused as busy, nothing
// runs twice); a delivered notification is not sent again while its
// delivery cannot be recorded. When space returns (the filler is deleted)
// the verdict is recorded under the run's own id, its incident's
// notifications are delivered exactly once, and the store passes
// integrity_check with the API's runs and the receivers' messages matching
// its rows.
func TestFaultsStoreDiskFull(t *testing.T) {
	parallelBesideSoak(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		f := newStoreFaultEnv(t, e)
		d := f.start(t)
		d.eventually("the initial clean run", 60*time.Second, func() bool { return d.workspaces()["payments"].Status == "clean" })
		require.Zero(t, d.metric("driftwatch_store_write_failing"))
		require.Zero(t, d.metric("driftwatch_store_write_errors_total"))

		// 1. Disk full while a run plans: its verdict cannot be written.
		f.edit(t, "hand edit")
		id := storeFaultTrigger(t, d, "payments", f.token)
		d.eventually("the run running", 30*time.Second, func() bool { return d.storeFaultRun(id).Status == "running" })
		filler := storeFaultFill(t, f.dataDir)
		d.eventually("the failed verdict write reported", 30*time.Second, func() bool {
			return d.storeFaultLogCount("store: cannot record the run's verdict; retrying") >= 2
		})
		require.Equal(t, float64(1), d.metric("driftwatch_store_write_failing")) //nolint:testifylint // float-compare: a 0/1 gauge, exact in float64
		require.Greater(t, d.metric("driftwatch_store_write_errors_total"), float64(0))
		require.Contains(t, d.logs.String(), "store writes failing")
		d.storeFaultServesReads("payments", id, "running")
		require.Equal(t, "clean", d.workspaces()["payments"].Status, "reads answer what is stored")
		code, body := postBody(t, d, "/api/v1/workspaces/payments/runs", f.token)
		require.Equal(t, http.StatusConflict, code, "the run still holds its workspace: %s", body)
		require.Contains(t, body, id)
		require.Empty(t, f.as.hook.Deliveries(), "no incident before its run is recorded")

		require.NoError(t, os.Remove(filler))
		f.awaitRun(d, id, "drift", 60*time.Second)
		require.Equal(t, "drift", d.workspaces()["payments"].Status)
		require.Contains(t, d.logs.String(), "store writes recovered")
		require.Zero(t, d.metric("driftwatch_store_write_failing"))
		d.eventually("the incident's open delivered", 30*time.Second, func() bool {
			return len(f.as.hook.Deliveries()) == 1 && len(f.as.slack.Messages("C0DRIFT01")) == 1 && d.storeFaultPending()["hook"] == 0
		})
		require.Equal(t, "open", f.as.hook.Deliveries()[0].Payload.Event)

		// 2. Disk full while notifications are in flight: the receivers
		// are down when the drift is fixed, the disk fills, then they come
		// back and accept the resolve, which cannot be marked delivered.
		f.as.hook.Down()
		f.as.slack.Down()
		f.edit(t, "v1")
		attempts := f.as.hook.Attempts()
		id2 := storeFaultTrigger(t, d, "payments", f.token)
		f.awaitRun(d, id2, "clean", 60*time.Second)
		d.eventually("the resolve failing", 30*time.Second, func() bool {
			return f.as.hook.Attempts() > attempts && d.storeFaultPending()["hook"] == 1
		})
		errs := d.metric("driftwatch_store_write_errors_total")
		filler = storeFaultFill(t, f.dataDir)
		f.as.hook.Up()
		f.as.slack.Up()
		d.eventually("the resolve delivered with the disk full", 45*time.Second, func() bool {
			return len(f.as.hook.Deliveries()) == 2
		})
		d.eventually("its delivery's write failing, and retried", 30*time.Second, func() bool {
			// Or a second delivery: a resend is the failure looked for.
			return d.storeFaultLogCount("delivered, but cannot record it yet") >= 2 || len(f.as.hook.Deliveries()) > 2
		})
		require.Greater(t, d.metric("driftwatch_store_write_errors_total"), errs)
		require.Equal(t, float64(1), d.metric("driftwatch_store_write_failing")) //nolint:testifylint // float-compare: a 0/1 gauge, exact in float64
		require.Equal(t, 1, d.storeFaultPending()["hook"], "not recorded yet: the store is full")
		d.storeFaultServesReads("payments", id2, "clean")
		require.Len(t, f.as.hook.Deliveries(), 2, "not sent again while its delivery cannot be recorded")

		require.NoError(t, os.Remove(filler))
		d.eventually("every notification recorded delivered", 45*time.Second, func() bool {
			p := d.storeFaultPending()
			return p["hook"] == 0 && p["slack-oncall"] == 0
		})
		require.Equal(t, "resolve", f.as.hook.Deliveries()[1].Payload.Event)
		refused := d.metric("driftwatch_store_write_errors_total")
		f.stopAndReconcile(t, d, []string{"clean", "drift", "clean"})
		t.Logf("2 disk-full windows; %.0f store writes refused; 3 runs and %d notifications per notifier recorded once each; lost 0, doubled 0",
			refused, len(f.as.hook.Deliveries()))
	})
}

// TestFaultsStoreReadOnly makes the store's directory, then its file
// system, read-only.
//
// The directory, while the daemon runs: made immutable (chattr +i: no
// entry may be added or removed, even by root). Expectation: the daemon
// goes on recording runs and notifications (SQLite in WAL mode writes only
// to the files it already has open), and a stop and a start in that state
// lose nothing.
//
// The file system: Linux refuses to remount a file system read-only while
// a file on it is open for writing (EBUSY), and the daemon holds its store
// open from start to exit, so a running daemon meets this fault as the
// disk-full one (TestFaultsStoreDiskFull: the same failed-write path).
// Expectation: a daemon started with its store's file system read-only
// refuses to start (exit 1) with a message naming the store and saying
// the file system is read-only; once it is writable again the daemon
// starts, the runs from before are all there, new runs are recorded once
// each, and the store passes integrity_check with the API's runs matching
// its rows.
func TestFaultsStoreReadOnly(t *testing.T) {
	parallelBesideSoak(t)
	forEachTool(t, func(t *testing.T, e *tfEnv) {
		f := newStoreFaultEnv(t, e)
		d := f.start(t)
		d.eventually("the initial clean run", 60*time.Second, func() bool { return d.workspaces()["payments"].Status == "clean" })

		// The store's directory made read-only while the daemon runs:
		// immutable (chattr +i), so that not even root may add or remove
		// an entry, as a read-only mode does for a daemon that is not
		// root. The store's files are open and stay writable (WAL mode
		// creates none while running): the run and its notifications are
		// recorded, and a stop and a start in that state lose nothing.
		storeFaultChattr(t, f.dataDir, "+i")
		immutable := true
		t.Cleanup(func() {
			if immutable {
				storeFaultChattr(t, f.dataDir, "-i")
			}
		})
		require.Error(t, os.WriteFile(filepath.Join(f.dataDir, "probe"), nil, 0o600), "the directory takes no new entry")
		f.edit(t, "hand edit")
		id := storeFaultTrigger(t, d, "payments", f.token)
		f.awaitRun(d, id, "drift", 60*time.Second)
		d.eventually("the incident's open delivered", 30*time.Second, func() bool {
			return len(f.as.hook.Deliveries()) == 1 && d.storeFaultPending()["hook"] == 0 && d.storeFaultPending()["slack-oncall"] == 0
		})
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		d = f.start(t)
		require.Equal(t, "drift", d.workspaces()["payments"].Status, "restarted in the read-only directory, the history is intact")
		require.Equal(t, 0, d.stop(syscall.SIGTERM, 30*time.Second))
		storeFaultChattr(t, f.dataDir, "-i")
		immutable = false

		storeFaultRemount(t, f.dataDir, "ro")
		remounted := true
		t.Cleanup(func() {
			if remounted {
				storeFaultRemount(t, f.dataDir, "rw")
			}
		})
		out := driftwatch(t, f.as.env, "daemon", "--config", f.cfg)
		require.Equal(t, 1, out.code, out.stderr)
		require.Contains(t, out.stderr, "driftwatch: store "+f.store)
		require.Contains(t, out.stderr, "read-only file system")
		storeFaultRemount(t, f.dataDir, "rw")
		remounted = false

		d = f.start(t)
		require.Equal(t, "drift", d.workspaces()["payments"].Status, "the history is intact")
		f.edit(t, "v1")
		id2 := storeFaultTrigger(t, d, "payments", f.token)
		f.awaitRun(d, id2, "clean", 60*time.Second)
		d.eventually("the resolve delivered", 30*time.Second, func() bool {
			p := d.storeFaultPending()
			return len(f.as.hook.Deliveries()) == 2 && p["hook"] == 0 && p["slack-oncall"] == 0
		})
		f.stopAndReconcile(t, d, []string{"clean", "drift", "clean"})
	})
}

// TestFaultsStoreCorruptAtStart starts the daemon on store files it must
// not use: a file whose header is garbage, a store cut short, a store
// with a damaged page, one written by a newer driftwatch (a schema
// version this binary does not know), and another program's SQLite
// database.
//
// Expectation: each time the daemon refuses to start (exit 1, before
// serving anything) with a message naming the file and what is wrong
// with it, and leaves the file as it was: same bytes, same modification
// time. It never repairs a store by recreating it.
func TestFaultsStoreCorruptAtStart(t *testing.T) {
	parallelBesideSoak(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	e.workspace(t, "payments", map[string]string{"main.tf": `resource "terraform_data" "x" { input = 1 }`})

	// A real store with history, written by the store package itself.
	good := filepath.Join(e.root, "good.db")
	func() {
		st, err := sqlite.Open(context.Background(), good, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer st.Close()
		at := time.Now().UTC()
		for i := range 50 {
			r := store.Run{ID: fmt.Sprintf("run-%03d", i), Workspace: "payments", Trigger: "schedule", StartedAt: at, Status: store.RunRunning}
			require.NoError(t, st.StartRun(context.Background(), r))
			r.FinishedAt, r.Status, r.Error = at.Add(time.Second), drift.StatusErrored, strings.Repeat("x", 2000)
			_, _, err := st.FinishRun(context.Background(), r)
			require.NoError(t, err)
		}
	}()
	goodBytes, err := os.ReadFile(good)
	require.NoError(t, err)
	require.Greater(t, len(goodBytes), 16*4096, "a store of many pages")

	withSQL := func(stmt string) func(t *testing.T, p string) {
		return func(t *testing.T, p string) {
			db, err := sql.Open("sqlite", p)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec(stmt)
			require.NoError(t, err)
			_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
			require.NoError(t, err)
		}
	}
	cases := []struct {
		name string
		make func(t *testing.T, p string)
		want string
	}{
		{"garbage header", func(t *testing.T, p string) {
			b := bytes.Clone(goodBytes)
			copy(b, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 25))
			require.NoError(t, os.WriteFile(p, b, 0o600))
		}, "not a sqlite database"},
		{"truncated", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, goodBytes[:len(goodBytes)/2], 0o600))
		}, "database is damaged"},
		{"damaged page", func(t *testing.T, p string) {
			b := bytes.Clone(goodBytes)
			// The pages past the schema hold the runs' table and indexes.
			copy(b[3*4096:], bytes.Repeat([]byte{0x5a}, 4*4096))
			require.NoError(t, os.WriteFile(p, b, 0o600))
		}, "database is damaged"},
		{"newer schema", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, goodBytes, 0o600))
			withSQL("PRAGMA user_version = 999")(t, p)
		}, "schema version 999 was created by a newer driftwatch"},
		{"another program's database", func(t *testing.T, p string) {
			withSQL("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')")(t, p)
		}, "not a driftwatch database"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			dir := filepath.Join(e.root, "stores", strings.ReplaceAll(c.name, " ", "-"))
			require.NoError(t, os.MkdirAll(dir, 0o700))
			p := filepath.Join(dir, "dw.db")
			c.make(t, p)
			// An old modification time: a write would move it to now.
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			require.NoError(t, os.Chtimes(p, old, old))
			before, err := os.ReadFile(p)
			require.NoError(t, err)

			cfg := e.config(t, fmt.Sprintf(`
server: { listen: "%s" }
store: { path: %s }
workspaces:
  - name: payments
    source: { path: ./payments }
`, freePort(t), p))
			out := driftwatch(t, nil, "daemon", "--config", cfg)
			require.Equal(t, 1, out.code, out.stderr)
			require.Contains(t, out.stderr, "driftwatch: store "+p+": ")
			require.Contains(t, out.stderr, c.want)
			require.NotContains(t, out.stderr, "driftwatch daemon started")

			after, err := os.ReadFile(p)
			require.NoError(t, err)
			require.True(t, bytes.Equal(before, after), "the file was modified")
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.True(t, fi.ModTime().Equal(old), "modification time moved to %s", fi.ModTime())
			for _, side := range []string{"-wal", "-journal"} {
				if fi, err := os.Stat(p + side); err == nil {
					require.Zero(t, fi.Size(), "%s holds writes", side)
				} else {
					require.ErrorIs(t, err, fs.ErrNotExist, "%v", err)
				}
			}
		})
	}
}
