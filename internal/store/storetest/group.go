package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

// GroupStore is what GroupConformance tests: a store.Store that is also
// a store.AlertStore (group incidents' messages go through its outbox,
// and workspaces' incidents hold keys a group may not take) and a
// store.GroupStore.
type GroupStore interface {
	store.Store
	store.AlertStore
	store.GroupStore
}

// GroupConformance runs the store.GroupStore contract against stores from
// open, one fresh directory and store per subtest, restarting the store
// where a case needs it.
//
// Beyond the interface's comments, the suite pins these choices: every
// field round-trips (times as instants, returned in UTC; zero times stay
// zero; members with their findings); the listings order by NotifiedAt,
// newest first, never-notified last, then by ID; decide gets the stored
// group incidents by ID; a changed incident replaces its row whole;
// DecideGroups refuses a zero time; a refused or panicking decide writes
// neither rows nor messages; Prune with an age limit deletes group
// incidents resolved before it, with their notifier states, unless a
// message of theirs is pending, and without one deletes none.
func GroupConformance(t *testing.T, open Opener[GroupStore]) {
	t.Helper()
	runReopenable(t, open, []reopenTest[GroupStore]{
		{"a group incident reads back as written, after a restart too", testGroupRoundTrip},
		{"open or all, most recently notified first", testGroupList},
		{"an unknown group is not found", testGroupNotFound},
		{"decide sees every stored group; a changed one is upserted by ID", testGroupUpsert},
		{"a refused decide writes nothing", testGroupRefuses},
		{"a panicking decide writes nothing", testGroupPanics},
		{"messages go to the outbox under the group's key", testGroupMessages},
		{"prune deletes groups resolved before the cutoff", testGroupPrune},
	})
}

// group is an open group incident as the lifecycle writes it, opened and
// notified at minute m.
func group(id string, m int) store.GroupIncident {
	return store.GroupIncident{
		ID: id, Key: "dw-group-" + id, Cause: "provider", CauseKey: "hashicorp/aws 5.1.0 -> 5.2.0: aws_s3_bucket update [tags.owner versioning]",
		Title: "2 workspaces: aws_s3_bucket drifted after hashicorp/aws 5.2.0", State: store.IncidentOpen,
		Members: []store.GroupMember{{Workspace: "net", Finding: fDrift}, {Workspace: "net", Finding: fForbidden},
			{Workspace: "web", Finding: fDrift}},
		Workspaces: 2, FirstSeen: minutes(m - 10), LastSeen: minutes(m - 5), OpenedAt: minutes(m), NotifiedAt: minutes(m),
		Fingerprint: "fp-" + id, Severity: "high",
	}
}

// resolvedGroup is g resolved at minute m.
func resolvedGroup(g store.GroupIncident, m int) store.GroupIncident {
	g.State, g.ResolvedAt, g.NotifiedAt = store.IncidentResolved, minutes(m), minutes(m)
	return g
}

// groupDecide is a decide that ignores what is stored.
func groupDecide(changed []store.GroupIncident, enqueue ...store.OutboxMessage) func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
	return func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) { return changed, enqueue }
}

func decideGroups(t *testing.T, s GroupStore, at int, changed []store.GroupIncident, enqueue ...store.OutboxMessage) {
	t.Helper()
	require.NoError(t, s.DecideGroups(t.Context(), minutes(at), groupDecide(changed, enqueue...)))
}

func groupIDs(t *testing.T, s GroupStore, all bool) []string {
	t.Helper()
	gs, err := s.GroupIncidents(t.Context(), all)
	require.NoError(t, err)
	out := []string{}
	for _, g := range gs {
		out = append(out, g.ID)
	}
	return out
}

// requireUTC checks that every time of g is in UTC.
func requireUTC(t *testing.T, g store.GroupIncident) {
	t.Helper()
	for _, at := range []time.Time{g.FirstSeen, g.LastSeen, g.OpenedAt, g.NotifiedAt, g.ResolvedAt} {
		require.Equal(t, time.UTC, at.Location(), "group %s: %s", g.ID, at)
	}
}

func testGroupRoundTrip(t *testing.T, s GroupStore, reopen func() GroupStore) {
	ctx := t.Context()
	full := resolvedGroup(group("g-full", 20), 30)
	full.OpenedAt = t0 // nanoseconds and a zone: must round-trip as an instant
	bare := store.GroupIncident{ID: "g-bare", Key: "dw-group-bare", Cause: "shape", State: store.IncidentOpen}
	decideGroups(t, s, 31, []store.GroupIncident{full, bare})

	check := func(s GroupStore) {
		t.Helper()
		for _, want := range []store.GroupIncident{full, bare} {
			got, err := s.GroupIncident(ctx, want.ID)
			require.NoError(t, err)
			equal(t, want, got)
			requireUTC(t, got)
		}
		got, err := s.GroupIncident(ctx, "g-bare")
		require.NoError(t, err)
		require.True(t, got.FirstSeen.IsZero() && got.LastSeen.IsZero() && got.OpenedAt.IsZero() &&
			got.NotifiedAt.IsZero() && got.ResolvedAt.IsZero(), "zero times stay zero: %+v", got)
		require.Empty(t, got.Members)
		all, err := s.GroupIncidents(ctx, true)
		require.NoError(t, err)
		equal(t, []store.GroupIncident{full, bare}, all)
	}
	check(s)
	check(reopen())
}

func testGroupList(t *testing.T, s GroupStore, _ func() GroupStore) {
	require.Empty(t, groupIDs(t, s, true))
	never := group("g-never", 0)
	never.NotifiedAt = time.Time{}
	decideGroups(t, s, 50, []store.GroupIncident{
		group("g-b", 10), group("g-a", 10), never, group("g-new", 40),
		resolvedGroup(group("g-res", 1), 45), resolvedGroup(group("g-old", 1), 2),
	})
	require.Equal(t, []string{"g-new", "g-a", "g-b", "g-never"}, groupIDs(t, s, false),
		"open ones, most recently notified first, then by ID, never notified last")
	require.Equal(t, []string{"g-res", "g-new", "g-a", "g-b", "g-old", "g-never"}, groupIDs(t, s, true))
}

func testGroupNotFound(t *testing.T, s GroupStore, _ func() GroupStore) {
	_, err := s.GroupIncident(t.Context(), "g-nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	decideGroups(t, s, 1, []store.GroupIncident{group("g-1", 1)})
	_, err = s.GroupIncident(t.Context(), "g-nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.GroupIncident(t.Context(), "dw-group-g-1")
	require.ErrorIs(t, err, store.ErrNotFound, "by ID, not by key")
}

func testGroupUpsert(t *testing.T, s GroupStore, _ func() GroupStore) {
	ctx := t.Context()
	g1, g2 := group("g-1", 1), resolvedGroup(group("g-2", 1), 3)
	var seen [][]store.GroupIncident
	record := func(changed []store.GroupIncident) func([]store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
		return func(stored []store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
			seen = append(seen, stored)
			return changed, nil
		}
	}
	require.NoError(t, s.DecideGroups(ctx, minutes(3), record([]store.GroupIncident{g2, g1})))
	// g1 changes whole: fewer members, a new title, resolved.
	g1b := resolvedGroup(g1, 9)
	g1b.Members, g1b.Workspaces, g1b.Title, g1b.Fingerprint = g1.Members[:1], 1, "1 workspace", "fp-2"
	g1b.Severity, g1b.CauseKey, g1b.LastSeen = "low", "changed", minutes(8)
	require.NoError(t, s.DecideGroups(ctx, minutes(9), record([]store.GroupIncident{g1b})))
	require.NoError(t, s.DecideGroups(ctx, minutes(10), record(nil)))

	require.Len(t, seen, 3)
	require.Empty(t, seen[0], "an empty store")
	equal(t, []store.GroupIncident{g1, g2}, seen[1], "every stored group, resolved too, by ID")
	equal(t, []store.GroupIncident{g1b, g2}, seen[2])
	got, err := s.GroupIncident(ctx, "g-1")
	require.NoError(t, err)
	equal(t, g1b, got)
	require.Equal(t, []string{"g-1", "g-2"}, groupIDs(t, s, true), "updated, not added")
	require.Empty(t, groupIDs(t, s, false))
}

func testGroupRefuses(t *testing.T, s GroupStore, _ func() GroupStore) {
	ctx := t.Context()
	stored := group("g-stored", 1)
	decideGroups(t, s, 1, []store.GroupIncident{stored}, msg("m-stored", "n1", stored.Key, minutes(1)))
	ws := incident("dw-drift-net", "net", "drift", minutes(1))
	runWith(t, s, "r1", "net", 0, 1, fixed([]store.Incident{ws}))

	fresh := group("g-new", 5)
	good := msg("m-new", "n1", fresh.Key, time.Time{})
	with := func(edit func(*store.GroupIncident)) []store.GroupIncident {
		g := fresh
		edit(&g)
		return []store.GroupIncident{g}
	}
	withMsg := func(edit func(*store.OutboxMessage)) []store.OutboxMessage {
		m := good
		edit(&m)
		return []store.OutboxMessage{m}
	}
	unchanged := func(*store.GroupIncident) {}
	for _, tc := range []struct {
		name    string
		changed []store.GroupIncident
		enqueue []store.OutboxMessage
	}{
		{"no id", with(func(g *store.GroupIncident) { g.ID = "" }), nil},
		{"no key", with(func(g *store.GroupIncident) { g.Key = "" }), nil},
		{"no cause", with(func(g *store.GroupIncident) { g.Cause = "" }), nil},
		{"no state", with(func(g *store.GroupIncident) { g.State = "" }), nil},
		{"pending", with(func(g *store.GroupIncident) { g.State = store.IncidentPending }), nil},
		{"another group's key", with(func(g *store.GroupIncident) { g.Key = stored.Key }), nil},
		{"a workspace incident's key", with(func(g *store.GroupIncident) { g.Key = ws.Key }), nil},
		{"an id returned twice", append(with(unchanged), with(func(g *store.GroupIncident) { g.Key = "dw-group-other" })...), nil},
		{"two groups, one key", append(with(unchanged), with(func(g *store.GroupIncident) { g.ID = "g-other" })...), nil},
		{"a message without id", with(unchanged), withMsg(func(m *store.OutboxMessage) { m.ID = "" })},
		{"a message without notifier", with(unchanged), withMsg(func(m *store.OutboxMessage) { m.Notifier = "" })},
		{"a message without payload", with(unchanged), withMsg(func(m *store.OutboxMessage) { m.Payload = nil })},
		{"a message for no group", with(unchanged), withMsg(func(m *store.OutboxMessage) { m.IncidentKey = "dw-group-nope" })},
		{"a message for a workspace's incident", with(unchanged), withMsg(func(m *store.OutboxMessage) { m.IncidentKey = ws.Key })},
		{"a message already in the outbox", with(unchanged), withMsg(func(m *store.OutboxMessage) { m.ID = "m-stored" })},
		{"a message enqueued twice", with(unchanged), append(withMsg(func(*store.OutboxMessage) {}), good)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, s.DecideGroups(ctx, minutes(5), groupDecide(tc.changed, tc.enqueue...)))
			requireGroupsUntouched(t, s, stored)
		})
	}
	require.Error(t, s.DecideGroups(ctx, time.Time{}, groupDecide(with(unchanged), good)), "a time is required")
	requireGroupsUntouched(t, s, stored)
	incs, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	equal(t, []store.Incident{ws}, incs, "the workspace's incident is left alone")

	// The same, right, is written.
	decideGroups(t, s, 5, with(unchanged), good)
	require.Equal(t, []string{"g-new", "g-stored"}, groupIDs(t, s, true))
}

// requireGroupsUntouched checks that the store holds only stored, and
// only its message m-stored in the outbox.
func requireGroupsUntouched(t *testing.T, s GroupStore, stored store.GroupIncident) {
	t.Helper()
	all, err := s.GroupIncidents(t.Context(), true)
	require.NoError(t, err)
	equal(t, []store.GroupIncident{stored}, all, "a refused decide wrote a group")
	require.Equal(t, []string{"m-stored"}, due(t, s, minutes(1000), 0), "a refused decide enqueued a message")
	stats, err := s.OutboxStats(t.Context())
	require.NoError(t, err)
	equal(t, map[string]store.OutboxCounts{"n1": {Pending: 1, OldestPending: minutes(1)}}, stats)
}

func testGroupPanics(t *testing.T, s GroupStore, _ func() GroupStore) {
	ctx := t.Context()
	stored := group("g-stored", 1)
	decideGroups(t, s, 1, []store.GroupIncident{stored}, msg("m-stored", "n1", stored.Key, minutes(1)))
	err := s.DecideGroups(ctx, minutes(2), func(gs []store.GroupIncident) ([]store.GroupIncident, []store.OutboxMessage) {
		gs[0].Title = "changed before the panic"
		panic(errors.New("lifecycle bug"))
	})
	require.ErrorContains(t, err, "lifecycle bug")
	requireGroupsUntouched(t, s, stored)
	// The store goes on.
	decideGroups(t, s, 3, []store.GroupIncident{resolvedGroup(stored, 3)})
	require.Empty(t, groupIDs(t, s, false))
}

func testGroupMessages(t *testing.T, s GroupStore, reopen func() GroupStore) {
	ctx := t.Context()
	g := group("g-1", 1)
	opened := msg("g-1/open/slack", "slack", g.Key, time.Time{}) // created at DecideGroups' time
	opened.NextAttempt = time.Time{}                             // its CreatedAt
	opened.Attempts, opened.LastError = 3, "ignored"
	pager := msg("g-1/open/pager", "pager", g.Key, minutes(1))
	decideGroups(t, s, 2, []store.GroupIncident{g}, opened, pager)

	msgs, err := s.DueMessages(ctx, minutes(10), 0)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Equal(t, opened.ID, msgs[0].ID)
	require.Equal(t, g.Key, msgs[0].IncidentKey)
	require.Equal(t, opened.Payload, msgs[0].Payload)
	require.True(t, msgs[0].CreatedAt.Equal(minutes(2)), "a zero CreatedAt is DecideGroups' time: %s", msgs[0].CreatedAt)
	require.True(t, msgs[0].NextAttempt.Equal(minutes(2)))
	require.Zero(t, msgs[0].Attempts)
	require.Empty(t, msgs[0].LastError)
	require.Equal(t, pager.ID, msgs[1].ID)
	require.True(t, msgs[1].CreatedAt.Equal(minutes(1)))

	require.NoError(t, s.MarkDelivered(ctx, opened.ID, minutes(3), []byte("ts=1700000000.1")))
	s = reopen()
	st, err := s.NotifierState(ctx, "slack", g.Key)
	require.NoError(t, err)
	require.Equal(t, []byte("ts=1700000000.1"), st)
	got, err := s.GroupIncident(ctx, g.ID)
	require.NoError(t, err)
	equal(t, g, got)
	require.Equal(t, []string{pager.ID}, due(t, s, minutes(10), 0))

	// A later decide enqueues for a stored group without changing it; the
	// group's queue keeps its order.
	update := msg("g-1/update/slack", "slack", g.Key, time.Time{})
	decideGroups(t, s, 11, nil, update)
	require.Equal(t, []string{pager.ID, update.ID}, due(t, s, minutes(20), 0))
	got, err = s.GroupIncident(ctx, g.ID)
	require.NoError(t, err)
	equal(t, g, got)
}

func testGroupPrune(t *testing.T, s GroupStore, reopen func() GroupStore) {
	ctx := t.Context()
	old := resolvedGroup(group("g-old", 1), 2)
	busy := resolvedGroup(group("g-busy", 1), 2)
	recent := resolvedGroup(group("g-recent", 1), 200)
	live := group("g-live", 1)
	decideGroups(t, s, 2, []store.GroupIncident{old, busy, recent, live},
		msg("old-1", "n1", old.Key, minutes(1)), msg("busy-1", "n1", busy.Key, minutes(1)),
		msg("dead-1", "n2", old.Key, minutes(1)), msg("live-1", "n1", live.Key, minutes(1)))
	deliver(t, s, minutes(5), "old-1", "live-1")
	require.NoError(t, s.MarkFailed(ctx, "dead-1", "410 gone", time.Time{}, true))
	// busy-1 stays pending; its notifier state must outlive the prune.
	require.NoError(t, s.SaveNotifierState(ctx, "n1", busy.Key, []byte("busy")))

	n, err := s.Prune(ctx, 0, time.Time{})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, groupIDs(t, s, true), 4, "no age limit: no group incident is pruned")

	n, err = s.Prune(ctx, 0, minutes(100))
	require.NoError(t, err)
	require.Zero(t, n, "the result counts runs only")
	s = reopen()
	require.Equal(t, []string{"g-recent", "g-busy", "g-live"}, groupIDs(t, s, true),
		"g-old is resolved before the cutoff and has nothing pending")
	_, err = s.GroupIncident(ctx, old.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	for _, key := range []struct{ notifier, key string }{{"n1", old.Key}, {"n2", old.Key}, {"n1", live.Key}} {
		st, err := s.NotifierState(ctx, key.notifier, key.key)
		require.NoError(t, err)
		if key.key == live.Key {
			require.Equal(t, []byte("state of live-1"), st, "an open group keeps its state")
		} else {
			require.Nil(t, st, "the pruned group's notifier state went with it")
		}
	}
	st, err := s.NotifierState(ctx, "n1", busy.Key)
	require.NoError(t, err)
	require.Equal(t, []byte("busy"), st)
	require.Equal(t, []string{"busy-1"}, due(t, s, minutes(300), 0))
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{Dead: 1, LastError: "410 gone"}, stats["n2"], "a dead message stays, as a workspace incident's")
}
