package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// A file from before schema version 12 gets the group incidents' table,
// keeping its incidents and their messages; a group may not take a key
// one of them holds.
func TestGroupMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "driftwatch.db")
	old, err := sqlite.OpenVersion(ctx, path, testLogger(t), 11)
	require.NoError(t, err)
	_, err = old.GroupIncidents(ctx, true)
	require.Error(t, err, "no group incidents at version 11")
	r := store.Run{ID: "r1", Workspace: "net", Trigger: "schedule", StartedAt: time.Now()}
	require.NoError(t, old.StartRun(ctx, r))
	r.Status, r.FinishedAt = drift.StatusDrift, r.StartedAt.Add(time.Minute)
	_, _, err = old.FinishRunWithOutcome(ctx, r, outboxDecide("r1"))
	require.NoError(t, err)
	require.NoError(t, old.Close())

	s := openStore(t, path)
	v, err := sqlite.Pragma(ctx, s, "user_version")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(sqlite.SchemaVersion), v)
	incs, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	require.Len(t, incs, 1)
	due, err := s.DueMessages(ctx, r.FinishedAt, 0)
	require.NoError(t, err)
	require.Len(t, due, len(outboxNotifiers))

	taken := store.GroupIncident{ID: "g-1", Key: incs[0].Key, Cause: "commit", State: store.IncidentOpen}
	err = s.DecideGroups(ctx, r.FinishedAt, func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
		return []store.GroupIncident{taken}, nil
	})
	require.ErrorContains(t, err, `key "dw-drift-net" belongs to an incident of workspace net`)
	free := taken
	free.Key = "dw-group-1"
	require.NoError(t, s.DecideGroups(ctx, r.FinishedAt, func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
		return []store.GroupIncident{free}, nil
	}))
	groups, err := s.GroupIncidents(ctx, false)
	require.NoError(t, err)
	require.Equal(t, []store.GroupIncident{free}, groups)
}
