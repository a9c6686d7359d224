package sqlite_test

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

var statsT0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// finishRun records a run that started at statsT0+start (hours) and took a
// minute.
func finishRun(t *testing.T, s *sqlite.Store, id, ws string, startH float64, status drift.Status, fs ...drift.Finding) {
	t.Helper()
	start := statsT0.Add(time.Duration(startH * float64(time.Hour)))
	require.NoError(t, s.StartRun(t.Context(), store.Run{ID: id, Workspace: ws, Trigger: "schedule", StartedAt: start}))
	r := store.Run{ID: id, FinishedAt: start.Add(time.Minute), Status: status, Findings: fs}
	if status == drift.StatusErrored {
		r.Error = "plan failed"
	}
	_, _, err := s.FinishRun(t.Context(), r)
	require.NoError(t, err)
}

func collect(t *testing.T, s *sqlite.Store, q store.StatsQuery) []string {
	t.Helper()
	var got []string
	require.NoError(t, s.StatsRuns(t.Context(), q, func(r store.StatsRun) error {
		mark := ""
		if r.Before {
			mark = "^"
		}
		got = append(got, mark+r.ID+":"+string(r.Status))
		return nil
	}))
	return got
}

func TestStatsRuns(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	since := statsT0.Add(100 * time.Hour)
	// a: clean, drift (opens), errored, drift, all before the window;
	// then clean and errored in it.
	finishRun(t, s, "a1", "a", 1, drift.StatusClean)
	finishRun(t, s, "a2", "a", 2, drift.StatusClean)
	finishRun(t, s, "a3", "a", 3, drift.StatusDrift)
	finishRun(t, s, "a4", "a", 4, drift.StatusForbidden)
	finishRun(t, s, "a5", "a", 5, drift.StatusErrored)
	finishRun(t, s, "a6", "a", 101, drift.StatusClean)
	finishRun(t, s, "a7", "a", 102, drift.StatusErrored)
	// b: drift from its first run on, errored last before the window.
	finishRun(t, s, "b1", "b", 1, drift.StatusDrift)
	finishRun(t, s, "b2", "b", 2, drift.StatusDrift)
	finishRun(t, s, "b3", "b", 3, drift.StatusErrored)
	finishRun(t, s, "b4", "b", 110, drift.StatusDrift)
	// c: only before the window: no window run, nothing read.
	finishRun(t, s, "c1", "c", 1, drift.StatusDrift)
	// d: a cancelled, a queued and a running run are not read.
	require.NoError(t, s.QueueRun(t.Context(), store.Run{ID: "d1", Workspace: "d", StartedAt: since.Add(time.Hour)}))
	require.NoError(t, s.FinishQueuedRun(t.Context(), store.Run{ID: "d1", Workspace: "d", StartedAt: since.Add(time.Hour), Status: store.RunCancelled, FinishedAt: since.Add(2 * time.Hour)}))
	require.NoError(t, s.QueueRun(t.Context(), store.Run{ID: "d5", Workspace: "d", StartedAt: since.Add(time.Hour)}))
	require.NoError(t, s.StartRun(t.Context(), store.Run{ID: "d2", Workspace: "d", StartedAt: since.Add(3 * time.Hour)}))
	finishRun(t, s, "d3", "d", 99.5, drift.StatusClean) // started before since, finished after
	finishRun(t, s, "d4", "d", 100, drift.StatusPending)

	// a's context: the last clean run before the drift (a2), the run that
	// opened it (a3), the last successful run (a4), the errored last run
	// (a5). b never was clean: its first run opened the drift.
	require.Equal(t, []string{
		"^a2:clean", "^a3:drift", "^a4:forbidden", "^a5:errored", "a6:clean", "a7:errored",
		"^b1:drift", "^b2:drift", "^b3:errored", "b4:drift",
		"^d3:clean", "d4:pending",
	}, collect(t, s, store.StatsQuery{Since: since}))
	require.Equal(t, []string{"^b1:drift", "^b2:drift", "^b3:errored", "b4:drift"},
		collect(t, s, store.StatsQuery{Since: since, Workspaces: []string{"b", "nope"}}))

	stop := errors.New("stop")
	n := 0
	err := s.StatsRuns(t.Context(), store.StatsQuery{Since: since}, func(store.StatsRun) error { n++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
}

func TestDriftedTypes(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	bucket := drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.a", Type: "aws_s3_bucket", Action: "update"}
	bucket2 := drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.b", Type: "aws_s3_bucket", Action: "update"}
	role := drift.Finding{Kind: drift.KindForbidden, Address: "aws_iam_role.x", Type: "aws_iam_role", Action: "create"}
	ignored := drift.Finding{Kind: drift.KindDrift, Address: "aws_sqs_queue.q", Type: "aws_sqs_queue", Action: "update", Ignored: true}
	noise := drift.Finding{Kind: drift.KindNoise, Address: "data.aws_ami.a", Type: "aws_ami", Action: "read"}
	pending := drift.Finding{Kind: drift.KindPending, Address: "aws_sns_topic.t", Type: "aws_sns_topic", Action: "create"}
	finishRun(t, s, "r1", "a", 1, drift.StatusDrift, bucket, bucket2, ignored, noise, pending)
	finishRun(t, s, "r2", "a", 2, drift.StatusForbidden, bucket, role)
	finishRun(t, s, "r3", "b", 1, drift.StatusDrift, bucket)
	finishRun(t, s, "r4", "b", 2, drift.StatusForbidden, role) // not asked for

	got, err := s.DriftedTypes(t.Context(), []string{"r1", "r2", "r3", "unknown"})
	require.NoError(t, err)
	slices.SortFunc(got, func(a, b store.TypeCount) int { return cmp.Compare(a.Type, b.Type) })
	require.Equal(t, []store.TypeCount{
		{Type: "aws_iam_role", Runs: 1, Workspaces: 1},
		{Type: "aws_s3_bucket", Runs: 3, Workspaces: 2}, // two findings in r1 count once
	}, got)

	got, err = s.DriftedTypes(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

// BenchmarkStats1000 times a 30-day report over 1,000 workspaces with
// statsRunsPerDay runs each a day (a run every 15 minutes: 2.88 million
// runs), one in ten drifted with two findings: StatsRuns streamed into a
// stats.Accumulator, then DriftedTypes over its drift runs. The rows are
// written straight into the tables in one transaction (FinishRun's
// durable transaction per run would take hours); filling is not timed.
func BenchmarkStats1000(b *testing.B) {
	const (
		workspaces      = 1000
		days            = 30
		statsRunsPerDay = 96
	)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	defer s.Close()
	now := time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC)
	start := now.AddDate(0, 0, -days)
	fillStats(b, sqlite.DB(s), start, workspaces, days*statsRunsPerDay, 24*time.Hour/statsRunsPerDay)

	since, err := stats.ParseSince("30d", now)
	require.NoError(b, err)
	var rep stats.Report
	for b.Loop() {
		acc, err := stats.NewAccumulator(since, now)
		require.NoError(b, err)
		require.NoError(b, s.StatsRuns(ctx, store.StatsQuery{Since: since}, func(r store.StatsRun) error {
			return acc.Add(stats.Run{ID: r.ID, Workspace: r.Workspace, Started: r.StartedAt, Finished: r.FinishedAt, Status: r.Status, Before: r.Before})
		}))
		types, err := s.DriftedTypes(ctx, acc.DriftRuns())
		require.NoError(b, err)
		var tcs []stats.TypeCount
		for _, t := range types {
			tcs = append(tcs, stats.TypeCount{Type: t.Type, WorkspaceDays: t.Runs, Workspaces: t.Workspaces})
		}
		rep = acc.Report(tcs)
	}
	require.Equal(b, workspaces, rep.Totals.Workspaces)
	require.NotEmpty(b, rep.TopResourceTypes)
}

// fillStats writes perWS runs per workspace, every step from start; run i
// of a workspace is drift (two findings) when i%10 == 3, errored when
// i%50 == 7, else clean, and takes 90 to 96 s. Each workspace gets a
// state row pointing at its last run.
func fillStats(b *testing.B, db *sql.DB, start time.Time, workspaces, perWS int, step time.Duration) {
	b.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(b, err)
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	ins, err := tx.PrepareContext(ctx, `INSERT INTO runs (id, workspace, "trigger", started_at, finished_at, status, error, tool, findings, phases)
VALUES (?, ?, 'schedule', ?, ?, ?, '', 'terraform 1.11.4', ?, '[]')`)
	require.NoError(b, err)
	st, err := tx.PrepareContext(ctx, `INSERT INTO workspace_state (workspace, status, since, last_run_id, last_run_at, last_success_at, fingerprint, findings, error, consecutive_errors)
VALUES (?, 'clean', ?, ?, ?, ?, '', '[]', '', 0)`)
	require.NoError(b, err)
	findings, err := json.Marshal([]drift.Finding{
		{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"tags"}},
		{Kind: drift.KindDrift, Address: "aws_iam_role.ci", Type: "aws_iam_role", Action: "update", Attributes: []string{"assume_role_policy"}},
	})
	require.NoError(b, err)
	// Time-major, as a daemon writes them: a workspace's runs are spread
	// over the whole table, not packed together.
	for i := range perWS {
		for w := range workspaces {
			ws := fmt.Sprintf("ws-%04d", w)
			at := start.Add(time.Duration(i)*step + time.Duration(w)*time.Second).UnixNano()
			status, fs := "clean", "[]"
			switch {
			case i%50 == 7:
				status = "errored"
			case i%10 == 3:
				status, fs = "drift", string(findings)
			}
			id := fmt.Sprintf("%s-%05d", ws, i)
			_, err := ins.ExecContext(ctx, id, ws, at, at+int64(90*time.Second)+int64(i%7)*int64(time.Second), status, fs)
			require.NoError(b, err)
			if i == perWS-1 {
				_, err := st.ExecContext(ctx, ws, at, id, at, at)
				require.NoError(b, err)
			}
		}
	}
	require.NoError(b, tx.Commit())
}

// A file from before schema version 7 gets the stats index, and its runs
// are read through it.
func TestStatsIndexMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	old, err := sqlite.OpenVersion(t.Context(), path, testLogger(t), 6)
	require.NoError(t, err)
	finishRun(t, old, "r1", "a", 1, drift.StatusDrift)
	require.NoError(t, old.Close())

	s := openStore(t, path)
	var n int
	require.NoError(t, sqlite.DB(s).QueryRowContext(t.Context(),
		`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'runs_stats'`).Scan(&n))
	require.Equal(t, 1, n)
	require.Equal(t, []string{"r1:drift"}, collect(t, s, store.StatsQuery{Since: statsT0}))
}
