package silence

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

type fakeInventory struct{ cfg *config.Config }

func (f fakeInventory) Config() *config.Config { return f.cfg }

type fakeLeader struct{ err atomic.Pointer[error] }

func (f *fakeLeader) Ready() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

type fakeOutbox struct{ wakes atomic.Int32 }

func (f *fakeOutbox) Wake() { f.wakes.Add(1) }

type testService struct {
	*Service
	st     *sqlite.Store
	leader *fakeLeader
	outbox *fakeOutbox
}

func newTestService(t *testing.T, dbPath string) *testService {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	st, err := sqlite.Open(t.Context(), dbPath, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ts := &testService{st: st, leader: &fakeLeader{}, outbox: &fakeOutbox{}}
	cfg := &config.Config{Workspaces: []config.Workspace{{Name: "net", Labels: map[string]string{"team": "net"}}, {Name: "db"}}}
	ts.Service, err = New(t.Context(), Options{Store: st, Book: &Book{}, Inventory: fakeInventory{cfg}, Leader: ts.leader,
		Outbox: ts.outbox, Logger: logger})
	require.NoError(t, err)
	return ts
}

// Add refuses what is not a silence, with a reason for each; a workspace
// the config lacks is ErrUnknownWorkspace, a standby's answer is the
// leader's error, and nothing refused is stored.
func TestAddChecks(t *testing.T) {
	s := newTestService(t, filepath.Join(t.TempDir(), "dw.db"))
	for name, tc := range map[string]struct {
		req  Request
		want string
	}{
		"neither":      {Request{For: time.Hour, Comment: "x", CreatedBy: "a"}, "name a workspace or labels (not both)"},
		"both":         {Request{Workspace: "net", Labels: map[string]string{"a": "b"}, For: time.Hour, Comment: "x", CreatedBy: "a"}, "name a workspace or labels (not both)"},
		"no comment":   {Request{Workspace: "net", For: time.Hour, CreatedBy: "a"}, "comment is required: say why, for whoever is paged next"},
		"too short":    {Request{Workspace: "net", For: time.Second, Comment: "x", CreatedBy: "a"}, "for must be between 1m0s and 720h0m0s"},
		"too long":     {Request{Workspace: "net", For: 31 * 24 * time.Hour, Comment: "x", CreatedBy: "a"}, "for must be between 1m0s and 720h0m0s"},
		"no author":    {Request{Workspace: "net", For: time.Hour, Comment: " "}, "comment is required: say why, for whoever is paged next"},
		"blank author": {Request{Workspace: "net", For: time.Hour, Comment: "x", CreatedBy: " "}, "created_by is required"},
		"far ahead":    {Request{Workspace: "net", StartsAt: time.Now().Add(31 * 24 * time.Hour), For: time.Hour, Comment: "x", CreatedBy: "a"}, "starts_at is more than 720h0m0s ahead"},
		"empty label":  {Request{Labels: map[string]string{"team": ""}, For: time.Hour, Comment: "x", CreatedBy: "a"}, "labels need a key and a value"},
	} {
		_, err := s.Add(t.Context(), tc.req)
		var refused *RequestError
		require.ErrorAs(t, err, &refused, name)
		require.Equal(t, tc.want, refused.Reason, name)
	}
	_, err := s.Add(t.Context(), Request{Workspace: "nope", For: time.Hour, Comment: "x", CreatedBy: "a"})
	require.ErrorIs(t, err, ErrUnknownWorkspace)
	standby := errors.New("standby")
	s.leader.err.Store(&standby)
	_, err = s.Add(t.Context(), Request{Workspace: "net", For: time.Hour, Comment: "x", CreatedBy: "a"})
	require.ErrorIs(t, err, standby)
	_, err = s.Expire(t.Context(), "any", "bob")
	require.ErrorIs(t, err, standby)
	list, err := s.List(t.Context())
	require.NoError(t, err)
	require.Empty(t, list)
}

// A silence added holds its workspace at once (labels: every workspace
// with them), a new Service on the same store loads it, and Expire ends
// it and wakes Run, which releases the held messages and wakes the
// outbox.
func TestAddExpireRelease(t *testing.T) {
	db := filepath.Join(t.TempDir(), "dw.db")
	s := newTestService(t, db)
	byLabel, err := s.Add(t.Context(), Request{Labels: map[string]string{"team": "net"}, For: time.Hour, Comment: " migration ", CreatedBy: "alice"})
	require.NoError(t, err)
	require.Equal(t, "migration", byLabel.Comment)
	require.Equal(t, time.Hour, byLabel.EndsAt.Sub(byLabel.StartsAt))
	now := time.Now()
	_, held := s.o.Book.Held("net", map[string]string{"team": "net"}, now)
	require.True(t, held)
	_, held = s.o.Book.Held("db", nil, now)
	require.False(t, held)

	s2 := newTestService(t, db)
	_, held = s2.o.Book.Held("net", map[string]string{"team": "net"}, now)
	require.True(t, held, "loaded from the store")

	// A held message of net: Release keeps it while the silence holds.
	r := store.Run{ID: drift.NewRunID(), Workspace: "net", Trigger: "manual", StartedAt: now.UTC()}
	require.NoError(t, s.st.StartRun(t.Context(), r))
	r.FinishedAt, r.Status = now.UTC(), drift.StatusDrift
	_, _, err = s.st.FinishRunWithOutcome(t.Context(), r, func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		in := store.Incident{Key: "k", Workspace: "net", Class: "drift", State: store.IncidentOpen, OpenedAt: now.UTC()}
		return []store.Incident{in}, []store.OutboxMessage{{ID: "m1", Notifier: "hook", IncidentKey: "k", Payload: []byte(`{"Event":"open"}`), Held: true}}
	})
	require.NoError(t, err)
	s.Release(t.Context(), time.Now())
	wss, err := s.st.HeldWorkspaces(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"net"}, wss)
	require.Zero(t, s.outbox.wakes.Load())

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	_, err = s.Expire(t.Context(), byLabel.ID, "bob")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.outbox.wakes.Load() == 1 }, 10*time.Second, time.Millisecond,
		"expired: released at once, not at the next tick")
	wss, err = s.st.HeldWorkspaces(t.Context())
	require.NoError(t, err)
	require.Empty(t, wss)
	_, err = s.Expire(t.Context(), "nope", "bob")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Windows reports each configured window as of a moment.
func TestServiceWindows(t *testing.T) {
	s := newTestService(t, filepath.Join(t.TempDir(), "dw.db"))
	ws, err := Windows([]config.MaintenanceWindow{{Name: "always", Schedule: "* * * * *", Duration: config.Duration(2 * time.Minute)}})
	require.NoError(t, err)
	s.o.Book.SetWindows(ws)
	now := time.Now()
	got := s.Windows(now)
	require.Len(t, got, 1)
	require.Equal(t, "always", got[0].Name)
	require.True(t, got[0].Active)
	require.True(t, got[0].Ends.After(now))
}
