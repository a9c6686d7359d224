package sqlite_test

import (
	"crypto/sha256"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
)

// fillStore writes a row into every table a store keeps.
func fillStore(t *testing.T, s *sqlite.Store) {
	t.Helper()
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for i, id := range []string{"r1", "r2"} {
		r := store.Run{ID: id, Workspace: "net", Trigger: "schedule", StartedAt: at.Add(time.Duration(i) * time.Minute)}
		require.NoError(t, s.StartRun(ctx, r))
		r.Status, r.FinishedAt = drift.StatusDrift, r.StartedAt.Add(30*time.Second)
		r.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update"}}
		_, _, err := s.FinishRunWithOutcome(ctx, r, outboxDecide(id))
		require.NoError(t, err)
		require.NoError(t, s.SaveRunLog(ctx, id, []byte("plan of "+id+"\n")))
	}
	require.NoError(t, s.MarkDelivered(ctx, "r1/"+outboxNotifiers[0], at, []byte(`{"ts":"1.2"}`)))
	require.NoError(t, s.CreateRemediation(ctx, store.Remediation{ID: "rem1", Workspace: "net", DetectRunID: "r2", Commit: "abc",
		Mode: "approve", ChangeSet: []byte(`[]`), ChangeSetHash: "h", Refusals: []byte(`[]`), CreatedAt: at}))
	require.NoError(t, s.SetRemediationPaused(ctx, true))
	require.NoError(t, s.AddSilence(ctx, store.Silence{ID: "sil1", Workspace: "net", StartsAt: at, EndsAt: at.Add(time.Hour),
		Comment: "patching", CreatedBy: "alice", CreatedAt: at}))
	require.NoError(t, s.RecordAudit(ctx, store.AuditEntry{At: at, Actor: "alice", Method: "token", Action: "run", Target: "net",
		Result: "allowed", Status: 202, Source: "api"}))
	_, err := s.RememberSignature(ctx, "v0=abc", at.Add(5*time.Minute), at)
	require.NoError(t, err)
	hash := sha256.Sum256([]byte("session"))
	require.NoError(t, s.CreateSession(ctx, store.Session{IDHash: hash[:], Issuer: "https://idp", Subject: "alice", Name: "alice",
		Groups: []string{"ops"}, CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(8 * time.Hour)}))
	require.NoError(t, s.AddAcceptance(ctx, store.Acceptance{ID: "acc1", Workspace: "net", State: store.AcceptRunning, RequestedBy: "alice", CreatedAt: at}))
	require.NoError(t, s.DecideGroups(ctx, at, func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
		return []store.GroupIncident{{ID: "g-1", Key: "dw-group-1", Cause: "provider", CauseKey: "hashicorp/aws 5.2.0", State: store.IncidentOpen,
			Members:    []store.GroupMember{{Workspace: "net", Finding: drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs"}}},
			Workspaces: 1, FirstSeen: at, LastSeen: at, OpenedAt: at, NotifiedAt: at, Severity: "high"}}, nil
	}))
}

// migrate --to postgres: a SQLite store, every table filled, is copied
// into PostgreSQL; the counts match, and the copy reads back as the
// original through the store's own methods, then goes on working.
func TestCopyToPostgres(t *testing.T) {
	ctx := t.Context()
	src := openStore(t, filepath.Join(t.TempDir(), "driftwatch.db"))
	fillStore(t, src)
	dst := openPostgres(t, pgtest.Database(t))

	counts, err := src.CopyTo(ctx, dst)
	require.NoError(t, err)
	for _, c := range counts {
		require.Positive(t, c.Rows, "fillStore leaves no table empty: %s", c.Table)
	}

	wantRuns, err := src.Runs(ctx, "net", 0)
	require.NoError(t, err)
	gotRuns, err := dst.Runs(ctx, "net", 0)
	require.NoError(t, err)
	require.Equal(t, wantRuns, gotRuns)
	for _, read := range []func(s *sqlite.Store) (any, error){
		func(s *sqlite.Store) (any, error) { return s.Workspaces(ctx) },
		func(s *sqlite.Store) (any, error) { return s.Incidents(ctx, "") },
		func(s *sqlite.Store) (any, error) { return s.OutboxStats(ctx) },
		func(s *sqlite.Store) (any, error) { return s.RunLog(ctx, "r2") },
		func(s *sqlite.Store) (any, error) { return s.Remediations(ctx, "net", 0) },
		func(s *sqlite.Store) (any, error) { return s.RemediationPaused(ctx) },
		func(s *sqlite.Store) (any, error) { return s.Silences(ctx, time.Time{}) },
		func(s *sqlite.Store) (any, error) { return s.AuditEntries(ctx, store.AuditFilter{}) },
		func(s *sqlite.Store) (any, error) { return s.Sessions(ctx, store.SessionFilter{}) },
		func(s *sqlite.Store) (any, error) { return s.Acceptances(ctx, "", 0) },
		func(s *sqlite.Store) (any, error) { return s.GroupIncidents(ctx, true) },
		func(s *sqlite.Store) (any, error) { return s.DueMessages(ctx, time.Now(), 0) },
	} {
		want, err := read(src)
		require.NoError(t, err)
		got, err := read(dst)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	// The copy goes on: new audit entries get new ids, new runs new rows.
	require.NoError(t, dst.RecordAudit(ctx, store.AuditEntry{At: time.Now(), Actor: "bob", Action: "cancel", Result: "allowed", Status: 200, Source: "api"}))
	require.NoError(t, dst.StartRun(ctx, store.Run{ID: "r3", Workspace: "net", StartedAt: time.Now()}))

	_, err = src.CopyTo(ctx, dst)
	require.ErrorContains(t, err, "the destination is not empty: runs holds 3 rows")
}
