package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// snapshot is everything store.Store can read back of a file.
type snapshot struct {
	States []store.WorkspaceState
	Runs   map[string][]store.Run
}

func takeSnapshot(t *testing.T, s *sqlite.Store) snapshot {
	t.Helper()
	ctx := t.Context()
	states, err := s.Workspaces(ctx)
	require.NoError(t, err)
	snap := snapshot{States: states, Runs: map[string][]store.Run{}}
	for _, ws := range []string{"net", "apps"} {
		runs, err := s.Runs(ctx, ws, 0)
		require.NoError(t, err)
		snap.Runs[ws] = runs
	}
	return snap
}

func tableNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return out
}

// checkMigratedV1 opens a version-1 file at path, which holds the runs of
// writeV1 (or testdata/mkv1), and checks that migrating it lost nothing and
// that the alert tables work on it.
func checkMigratedV1(t *testing.T, path string) {
	t.Helper()
	ctx := t.Context()
	db := rawDB(t, path)
	require.Equal(t, int64(1), pragmaInt(t, db, "user_version"))
	require.Equal(t, []string{"runs", "workspace_state"}, tableNames(t, db))
	require.NoError(t, db.Close())

	// What this binary reads from it at version 1, through the same code.
	old, err := sqlite.OpenVersion(ctx, path, testLogger(t), 1)
	require.NoError(t, err)
	want := takeSnapshot(t, old)
	require.NoError(t, old.Close())
	require.Len(t, want.States, 2)
	require.Len(t, want.Runs["net"], 4)
	require.Len(t, want.Runs["apps"], 3)

	s := openStore(t, path) // migrates
	got := takeSnapshot(t, s)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("migration changed the data (-v1 +v2):\n%s", diff)
	}
	v, err := sqlite.Pragma(ctx, s, "user_version")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(sqlite.SchemaVersion), v)
	check, err := sqlite.Pragma(ctx, s, "integrity_check")
	require.NoError(t, err)
	require.Equal(t, "ok", check)
	fk, err := sqlite.Pragma(ctx, s, "foreign_key_check")
	require.ErrorIs(t, err, sql.ErrNoRows, "foreign key violations: %s", fk)

	// The run a v1 process left running is found, and the workspaces carry
	// on with incidents.
	recovered, err := s.RecoverRuns(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, []string{"v1-run-inflight"}, ids(recovered.Errored))
	require.Equal(t, store.RunRestartedError, recovered.Errored[0].Error)
	require.Empty(t, recovered.Queued)
	r := store.Run{ID: "v2-run", Workspace: "net", Trigger: "schedule", StartedAt: time.Now()}
	require.NoError(t, s.StartRun(ctx, r))
	r.Status, r.FinishedAt = drift.StatusClean, time.Now()
	before, _, err := s.FinishRunWithOutcome(ctx, r, func(b, _ store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		require.Empty(t, incidents)
		in := store.Incident{Key: "dw-drift-net", Workspace: "net", Class: "drift", State: store.IncidentOpen, Observations: 1, OpenedAt: b.Since}
		return []store.Incident{in}, []store.OutboxMessage{{ID: "m1", Notifier: "slack", IncidentKey: in.Key, Payload: []byte("{}")}}
	})
	require.NoError(t, err)
	for _, st := range want.States {
		if st.Workspace == "net" {
			if diff := cmp.Diff(st, before); diff != "" {
				t.Fatalf("before is not the v1 state (-want +got):\n%s", diff)
			}
		}
	}
	due, err := s.DueMessages(ctx, time.Now(), 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
}

// TestMigrateV1Fixture migrates testdata/v1.db, which the schema-1 code
// (commit aa7f2e7, testdata/mkv1) wrote: the file a deployed driftwatch has.
func TestMigrateV1Fixture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "v1.db"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	checkMigratedV1(t, path)
}

// TestMigrateV1MadeByThisCode writes a version-1 file with this binary's
// own code path (Open stopped at version 1, StartRun, FinishRun) and
// migrates it.
func TestMigrateV1MadeByThisCode(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	s, err := sqlite.OpenVersion(ctx, path, testLogger(t), 1)
	require.NoError(t, err)
	writeV1(t, s)
	require.NoError(t, s.Close())
	checkMigratedV1(t, path)
}

// writeV1 writes what testdata/mkv1 writes.
func writeV1(t *testing.T, s *sqlite.Store) {
	t.Helper()
	ctx := t.Context()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	fd := drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags.owner"}}
	ff := drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_deployment.app", Type: "kubernetes_deployment", Action: "no-op", SeenIn: []string{"config"}}
	for i, st := range []struct {
		ws     string
		status drift.Status
		fs     []drift.Finding
	}{
		{"net", drift.StatusClean, nil},
		{"net", drift.StatusDrift, []drift.Finding{fd}},
		{"net", drift.StatusErrored, nil},
		{"apps", drift.StatusForbidden, []drift.Finding{ff, fd}},
		{"apps", drift.StatusClean, nil},
		{"net", drift.StatusDrift, []drift.Finding{fd}},
	} {
		r := store.Run{ID: fmt.Sprintf("v1-run-%d", i), Workspace: st.ws, Trigger: "schedule", StartedAt: t0.Add(time.Duration(i) * time.Hour)}
		require.NoError(t, s.StartRun(ctx, r))
		r.Status, r.FinishedAt, r.Findings, r.Tool = st.status, r.StartedAt.Add(time.Minute), st.fs, "terraform 1.11.4"
		r.Phases = []drift.Phase{{Name: "plan", Duration: 42 * time.Second}}
		if st.status == drift.StatusErrored {
			r.Error = "plan: exit status 1"
		}
		_, _, err := s.FinishRun(ctx, r)
		require.NoError(t, err)
	}
	require.NoError(t, s.StartRun(ctx, store.Run{ID: "v1-run-inflight", Workspace: "apps", Trigger: "manual", StartedAt: t0.Add(10 * time.Hour)}))
}

// TestMigrationIsAtomic makes migration 2 fail half way: the file stays at
// version 1 with none of migration 2's tables, and opens once the obstacle
// is gone.
func TestMigrationIsAtomic(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	s, err := sqlite.OpenVersion(ctx, path, testLogger(t), 1)
	require.NoError(t, err)
	writeV1(t, s)
	require.NoError(t, s.Close())
	db := rawDB(t, path)
	// notifier_state comes after incidents and outbox in migration 2.
	_, err = db.ExecContext(ctx, `CREATE TABLE notifier_state (x)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = sqlite.Open(ctx, path, testLogger(t))
	require.ErrorContains(t, err, "migrate to schema version 2")
	db = rawDB(t, path)
	require.Equal(t, int64(1), pragmaInt(t, db, "user_version"))
	require.Equal(t, []string{"notifier_state", "runs", "workspace_state"}, tableNames(t, db))
	_, err = db.ExecContext(ctx, `DROP TABLE notifier_state`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	checkMigratedV1(t, path)
}

// TestDecideSeesTheOldSnapshot: decide runs inside the write transaction,
// and the store's readers, which decide may use, do not see it until it
// commits.
func TestDecideSeesTheOldSnapshot(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := store.Run{ID: "r1", Workspace: "net", StartedAt: start}
	require.NoError(t, s.StartRun(ctx, r))
	r.Status, r.FinishedAt = drift.StatusDrift, start.Add(time.Minute)
	in := store.Incident{Key: "dw-drift-net", Workspace: "net", Class: "drift", State: store.IncidentOpen, Observations: 1}
	m := store.OutboxMessage{ID: "m1", Notifier: "slack", IncidentKey: in.Key, Payload: []byte("{}")}
	_, _, err := s.FinishRunWithOutcome(ctx, r, func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		got, err := s.Run(ctx, "r1")
		require.NoError(t, err)
		require.Equal(t, store.RunRunning, got.Status)
		_, err = s.Workspace(ctx, "net")
		require.ErrorIs(t, err, store.ErrNotFound)
		incs, err := s.Incidents(ctx, "net")
		require.NoError(t, err)
		require.Empty(t, incs)
		return []store.Incident{in}, []store.OutboxMessage{m}
	})
	require.NoError(t, err)
	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, drift.StatusDrift, got.Status)
	due, err := s.DueMessages(ctx, r.FinishedAt, 0)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.True(t, due[0].CreatedAt.Equal(r.FinishedAt), "a zero CreatedAt is the run's finish")
}

// TestPruneKeepsNewestDelivered lowers the per-notifier limit of delivered
// messages and checks Prune keeps the newest of each notifier, never a
// pending one, and leaves a delivery time alone when MarkDelivered repeats.
func TestPruneKeepsNewestDelivered(t *testing.T) {
	ctx := t.Context()
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	sqlite.SetKeepDelivered(s, 3)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := store.Run{ID: "r1", Workspace: "net", StartedAt: base}
	require.NoError(t, s.StartRun(ctx, r))
	r.Status, r.FinishedAt = drift.StatusDrift, base
	var incs []store.Incident
	var msgs []store.OutboxMessage
	for i := range 6 {
		key := fmt.Sprintf("dw-%d", i) // one queue each: all due at once
		incs = append(incs, store.Incident{Key: key, Workspace: "net", Class: fmt.Sprint(i), State: store.IncidentOpen})
		for _, n := range []string{"n1", "n2"} {
			msgs = append(msgs, store.OutboxMessage{ID: fmt.Sprintf("%s/%d", n, i), Notifier: n, IncidentKey: key, Payload: []byte("{}")})
		}
	}
	msgs = append(msgs, store.OutboxMessage{ID: "n1/pending", Notifier: "n1", IncidentKey: "dw-5", Payload: []byte("{}")})
	_, _, err := s.FinishRunWithOutcome(ctx, r, func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		return incs, msgs
	})
	require.NoError(t, err)
	// n1 delivers 0..5 in order; n2 only 0 and 1.
	for i := range 6 {
		require.NoError(t, s.MarkDelivered(ctx, fmt.Sprintf("n1/%d", i), base.Add(time.Duration(i)*time.Minute), nil))
	}
	for i := range 2 {
		require.NoError(t, s.MarkDelivered(ctx, fmt.Sprintf("n2/%d", i), base.Add(time.Duration(i)*time.Minute), nil))
	}
	require.NoError(t, s.MarkDelivered(ctx, "n1/5", base.Add(time.Hour), nil), "repeated")

	n, err := s.Prune(ctx, 0, time.Time{})
	require.NoError(t, err)
	require.Zero(t, n, "no runs")

	rows, err := sqlite.DB(s).QueryContext(ctx, `SELECT id, delivered_at IS NOT NULL FROM outbox ORDER BY id`)
	require.NoError(t, err)
	left := map[string]bool{}
	for rows.Next() {
		var id string
		var delivered bool
		require.NoError(t, rows.Scan(&id, &delivered))
		left[id] = delivered
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, map[string]bool{
		"n1/3": true, "n1/4": true, "n1/5": true, "n1/pending": false,
		"n2/0": true, "n2/1": true, "n2/2": false, "n2/3": false, "n2/4": false, "n2/5": false,
	}, left)

	var at int64
	require.NoError(t, sqlite.DB(s).QueryRowContext(ctx, `SELECT delivered_at FROM outbox WHERE id = 'n1/5'`).Scan(&at))
	require.Equal(t, base.Add(5*time.Minute).UnixNano(), at, "the first delivery time stays")
}
