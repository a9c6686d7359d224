package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/store"
)

func testDueOrder(t *testing.T, s AlertStore) {
	ctx := t.Context()
	const A, B = "dw-drift-a", "dw-drift-b"
	// Enqueue order: a1 a2 b1 | a3 b2 a4.
	enqueue(t, s, "r1", "ws", 0,
		msg("a1", "n1", A, minutes(1)), msg("a2", "n2", A, minutes(1)), msg("b1", "n1", B, minutes(1)))
	enqueue(t, s, "r2", "ws", 2,
		msg("a3", "n1", A, minutes(3)), msg("b2", "n2", B, minutes(3)), msg("a4", "n2", A, minutes(3)))
	now := minutes(10)

	require.Equal(t, []string{"a1", "a2", "b1", "b2"}, due(t, s, now, 0), "the head of each (notifier, incident) queue, oldest first")
	require.Equal(t, []string{"a1", "a2"}, due(t, s, now, 2))
	require.Equal(t, []string{"a1", "a2", "b1", "b2"}, due(t, s, now, 50))
	require.Equal(t, []string{"a1", "a2", "b1"}, due(t, s, minutes(2), 0), "b2 is not due before it was created")
	require.Empty(t, due(t, s, minutes(0), 0))

	deliver(t, s, now, "a1")
	require.Equal(t, []string{"a2", "b1", "a3", "b2"}, due(t, s, now, 0), "a3 follows a1; n2's a4 still waits for a2")

	// A retry later holds back its queue only.
	require.NoError(t, s.MarkFailed(ctx, "a2", "503 from n2", now.Add(time.Hour), false))
	require.Equal(t, []string{"b1", "a3", "b2"}, due(t, s, now, 0), "a4 is due by time but a2 is older")
	deliver(t, s, now, "b1", "a3", "b2")
	require.Empty(t, due(t, s, now, 0))

	msgs, err := s.DueMessages(ctx, now.Add(time.Hour), 0) // at next, not after
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "a2", msgs[0].ID)
	require.Equal(t, 1, msgs[0].Attempts)
	require.Equal(t, "503 from n2", msgs[0].LastError)
	require.True(t, msgs[0].NextAttempt.Equal(now.Add(time.Hour)))
	deliver(t, s, now.Add(time.Hour), "a2")
	require.Equal(t, []string{"a4"}, due(t, s, now.Add(time.Hour), 0))
	deliver(t, s, now.Add(time.Hour), "a4")
	require.Empty(t, due(t, s, now.Add(1000*time.Hour), 0))
}

func testDueWaits(t *testing.T, s AlertStore) {
	c1 := msg("c1", "n1", "dw-c", minutes(1))
	c1.NextAttempt = minutes(11)
	c2 := msg("c2", "n1", "dw-c", minutes(1))
	d1 := msg("d1", "n2", "dw-c", minutes(1))
	enqueue(t, s, "r1", "ws", 0, c1, c2, d1)
	require.Equal(t, []string{"d1"}, due(t, s, minutes(10), 0), "c1 is not due yet, and c2 is behind it")
	require.Equal(t, []string{"c1", "d1"}, due(t, s, minutes(11), 0))
	_, err := s.DueMessages(t.Context(), minutes(11), -1)
	require.Error(t, err, "negative limit")
}

func testDueEnqueueOrder(t *testing.T, s AlertStore) {
	// x1 is enqueued first but claims to be younger.
	enqueue(t, s, "r1", "ws", 0, msg("x1", "n1", "dw-x", minutes(5)), msg("y1", "n1", "dw-y", minutes(5)))
	enqueue(t, s, "r2", "ws", 1, msg("x2", "n1", "dw-x", minutes(2)), msg("z1", "n1", "dw-z", minutes(1)))
	require.Equal(t, []string{"x1", "y1", "z1"}, due(t, s, minutes(10), 0))
	deliver(t, s, minutes(10), "x1")
	require.Equal(t, []string{"y1", "x2", "z1"}, due(t, s, minutes(10), 0))
}

func testDeadUnblocks(t *testing.T, s AlertStore) {
	ctx := t.Context()
	enqueue(t, s, "r1", "ws", 0, msg("m1", "n1", "dw-k", minutes(1)), msg("m2", "n1", "dw-k", minutes(1)), msg("m3", "n1", "dw-k", minutes(1)))
	now := minutes(10)
	require.Equal(t, []string{"m1"}, due(t, s, now, 0))
	require.NoError(t, s.MarkFailed(ctx, "m1", "400 invalid payload", time.Time{}, true))
	require.Equal(t, []string{"m2"}, due(t, s, now, 0), "the dead m1 no longer blocks")
	require.Equal(t, []string{"m2"}, due(t, s, now.Add(1000*time.Hour), 0), "and is never due again")

	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{Pending: 2, Dead: 1, LastError: "400 invalid payload", OldestPending: minutes(1)}, stats["n1"])

	// Dead is final.
	require.NoError(t, s.MarkFailed(ctx, "m1", "retry?", now, false))
	require.Equal(t, []string{"m2"}, due(t, s, now, 0), "a dead message stays dead")

	// A dead message in the middle of a queue.
	require.NoError(t, s.MarkFailed(ctx, "m2", "retry", now.Add(time.Minute), false))
	require.Empty(t, due(t, s, now, 0))
	require.NoError(t, s.MarkFailed(ctx, "m2", "gave up", now.Add(time.Minute), true))
	require.Equal(t, []string{"m3"}, due(t, s, now, 0))
	stats, err = s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{Pending: 1, Dead: 2, LastError: "gave up", OldestPending: minutes(1)}, stats["n1"])
}

func testMarkDeliveredIdempotent(t *testing.T, s AlertStore) {
	ctx := t.Context()
	enqueue(t, s, "r1", "ws", 0, msg("m1", "n1", "dw-k", minutes(1)), msg("m2", "n1", "dw-k", minutes(1)), msg("m3", "n1", "dw-k", minutes(1)))
	now := minutes(10)
	require.NoError(t, s.MarkDelivered(ctx, "m1", now, []byte("ts=1")))
	require.NoError(t, s.MarkDelivered(ctx, "m1", now.Add(time.Minute), []byte("stale")), "a repeated delivery succeeds")
	st, err := s.NotifierState(ctx, "n1", "dw-k")
	require.NoError(t, err)
	require.Equal(t, []byte("ts=1"), st, "and changes nothing")
	require.Equal(t, []string{"m2"}, due(t, s, now, 0))

	require.NoError(t, s.MarkFailed(ctx, "m1", "late failure report", now, false), "a delivered message stays delivered")
	require.Equal(t, []string{"m2"}, due(t, s, now, 0))
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{Pending: 2, OldestPending: minutes(1)}, stats["n1"])

	require.Error(t, s.MarkDelivered(ctx, "m2", time.Time{}, nil), "a delivery time is required")

	// Many deliverers racing on m2: all succeed, one state wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = s.MarkDelivered(ctx, "m2", now.Add(time.Duration(i)), []byte{'s', byte('0' + i)}) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "deliverer %d", i)
	}
	st, err = s.NotifierState(ctx, "n1", "dw-k")
	require.NoError(t, err)
	require.Len(t, st, 2)
	require.Equal(t, byte('s'), st[0])
	require.Equal(t, []string{"m3"}, due(t, s, now, 0))
}

func testMarkFailed(t *testing.T, s AlertStore) {
	ctx := t.Context()
	enqueue(t, s, "r1", "ws", 0, msg("m1", "n1", "dw-k", minutes(1)))
	require.Error(t, s.MarkFailed(ctx, "m1", "no retry time", time.Time{}, false))
	for i := 1; i <= 3; i++ {
		next := minutes(10 * i)
		require.NoError(t, s.MarkFailed(ctx, "m1", fmt.Sprintf("attempt %d: timeout", i), next, false))
		require.Empty(t, due(t, s, next.Add(-time.Nanosecond), 0))
		msgs, err := s.DueMessages(ctx, next, 0)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		require.Equal(t, i, msgs[0].Attempts)
		require.Equal(t, fmt.Sprintf("attempt %d: timeout", i), msgs[0].LastError)
		require.True(t, msgs[0].NextAttempt.Equal(next))
		require.True(t, msgs[0].CreatedAt.Equal(minutes(1)))
		require.Equal(t, payload("m1"), msgs[0].Payload)
	}
	deliver(t, s, minutes(30), "m1")
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{LastError: "attempt 3: timeout"}, stats["n1"], "the last error outlives the recovery")
}

func testMessageNotFound(t *testing.T, s AlertStore) {
	ctx := t.Context()
	enqueue(t, s, "r1", "ws", 0, msg("m1", "n1", "dw-k", minutes(1)))
	require.ErrorIs(t, s.MarkDelivered(ctx, "nope", minutes(2), []byte("x")), store.ErrNotFound)
	require.ErrorIs(t, s.MarkFailed(ctx, "nope", "boom", minutes(2), false), store.ErrNotFound)
	require.ErrorIs(t, s.MarkFailed(ctx, "nope", "boom", time.Time{}, true), store.ErrNotFound)
	st, err := s.NotifierState(ctx, "n1", "dw-k")
	require.NoError(t, err)
	require.Nil(t, st, "a refused delivery stored no state")
	require.Equal(t, []string{"m1"}, due(t, s, minutes(2), 0))
}

func testNotifierState(t *testing.T, s AlertStore) {
	ctx := t.Context()
	get := func(notifier, key string) []byte {
		t.Helper()
		st, err := s.NotifierState(ctx, notifier, key)
		require.NoError(t, err)
		return st
	}
	require.Nil(t, get("slack", "dw-k"))

	parent := []byte(`{"channel":"C1","ts":"1700000000.000100"}`)
	require.NoError(t, s.SaveNotifierState(ctx, "slack", "dw-k", parent))
	require.Equal(t, parent, get("slack", "dw-k"))
	require.Nil(t, get("opsgenie", "dw-k"), "per notifier")
	require.Nil(t, get("slack", "dw-other"), "per incident")

	// Neither the caller's slice nor the returned one aliases the store.
	parent[0] = 'X'
	got := get("slack", "dw-k")
	require.Equal(t, byte('{'), got[0])
	got[0] = 'Y'
	require.Equal(t, byte('{'), get("slack", "dw-k")[0])

	bin := []byte{0, 1, 2, 0xff, 0}
	require.NoError(t, s.SaveNotifierState(ctx, "opsgenie", "dw-k", bin))
	require.Equal(t, bin, get("opsgenie", "dw-k"), "any bytes")
	require.NoError(t, s.SaveNotifierState(ctx, "slack", "dw-k", []byte("v2")))
	require.Equal(t, []byte("v2"), get("slack", "dw-k"), "replaced")

	// MarkDelivered replaces it in the delivery's transaction.
	enqueue(t, s, "r1", "ws", 0, msg("m1", "slack", "dw-k", minutes(1)), msg("m2", "slack", "dw-k", minutes(1)))
	require.NoError(t, s.MarkDelivered(ctx, "m1", minutes(2), []byte("v3")))
	require.Equal(t, []byte("v3"), get("slack", "dw-k"))
	require.Equal(t, bin, get("opsgenie", "dw-k"), "another notifier's state is untouched")

	// Nil forgets.
	require.NoError(t, s.MarkDelivered(ctx, "m2", minutes(3), nil))
	require.Nil(t, get("slack", "dw-k"))
	require.NoError(t, s.SaveNotifierState(ctx, "opsgenie", "dw-k", nil))
	require.Nil(t, get("opsgenie", "dw-k"))
	require.NoError(t, s.SaveNotifierState(ctx, "opsgenie", "dw-k", nil), "forgetting nothing is fine")

	require.Error(t, s.SaveNotifierState(ctx, "", "dw-k", []byte("x")))
	require.Error(t, s.SaveNotifierState(ctx, "slack", "", []byte("x")))
}

func testOutboxStats(t *testing.T, s AlertStore) {
	ctx := t.Context()
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	require.Empty(t, stats)

	enqueue(t, s, "r1", "ws", 0,
		msg("a1", "n1", "dw-a", minutes(1)), msg("b1", "n1", "dw-b", minutes(2)), msg("c1", "n1", "dw-c", minutes(3)),
		msg("a2", "n1", "dw-a", minutes(4)), msg("x1", "n2", "dw-a", minutes(5)))
	stats, err = s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, map[string]store.OutboxCounts{
		"n1": {Pending: 4, OldestPending: minutes(1)},
		"n2": {Pending: 1, OldestPending: minutes(5)},
	}, stats)

	require.NoError(t, s.MarkFailed(ctx, "b1", "timeout", minutes(20), false))
	require.NoError(t, s.MarkFailed(ctx, "a1", "401 unauthorized", time.Time{}, true))
	require.NoError(t, s.MarkFailed(ctx, "c1", "503", minutes(20), false))
	deliver(t, s, minutes(6), "x1")
	stats, err = s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, map[string]store.OutboxCounts{
		"n1": {Pending: 3, Dead: 1, LastError: "503", OldestPending: minutes(2)},
		"n2": {}, // only delivered messages: listed, all zero
	}, stats)

	require.NoError(t, s.MarkFailed(ctx, "b1", "timeout again", minutes(30), false))
	deliver(t, s, minutes(7), "a2") // a1 is dead: a2 is its queue's head
	stats, err = s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{Pending: 2, Dead: 1, LastError: "timeout again", OldestPending: minutes(2)}, stats["n1"])
}

func testPruneAlerts(t *testing.T, s AlertStore) {
	ctx := t.Context()
	old := incident("dw-old", "ws", "drift", minutes(1))
	old.State, old.ResolvedAt = store.IncidentResolved, minutes(2)
	busy := incident("dw-busy", "ws", "forbidden", minutes(1))
	busy.State, busy.ResolvedAt = store.IncidentResolved, minutes(2)
	recent := incident("dw-recent", "ws", "errored", minutes(1))
	recent.State, recent.ResolvedAt = store.IncidentResolved, minutes(200)
	live := incident("dw-live", "other", "drift", minutes(1))
	runWith(t, s, "r1", "ws", 0, 1, fixed([]store.Incident{old, busy, recent},
		msg("old-1", "n1", old.Key, minutes(1)), msg("busy-1", "n1", busy.Key, minutes(1)),
		msg("recent-1", "n1", recent.Key, minutes(1)), msg("dead-1", "n2", old.Key, minutes(1))))
	runWith(t, s, "r2", "other", 0, 1, fixed([]store.Incident{live}, msg("live-1", "n1", live.Key, minutes(1))))
	deliver(t, s, minutes(5), "old-1", "live-1")
	deliver(t, s, minutes(200), "recent-1")
	require.NoError(t, s.MarkFailed(ctx, "dead-1", "410 gone", time.Time{}, true))
	// busy-1 stays pending; its notifier state must outlive the prune.
	require.NoError(t, s.SaveNotifierState(ctx, "n1", busy.Key, []byte("busy")))
	require.NoError(t, s.SaveNotifierState(ctx, "n2", old.Key, []byte("old")))

	n, err := s.Prune(ctx, 0, time.Time{})
	require.NoError(t, err)
	require.Zero(t, n)
	incs, err := s.Incidents(ctx, "ws")
	require.NoError(t, err)
	require.Len(t, incs, 3, "no age limit: no incident is pruned")

	n, err = s.Prune(ctx, 0, minutes(100))
	require.NoError(t, err)
	require.Zero(t, n, "the result counts runs only, and both runs are their states'")

	// Delivered before the cutoff: gone (MarkDelivered no longer finds it).
	require.ErrorIs(t, s.MarkDelivered(ctx, "old-1", minutes(300), nil), store.ErrNotFound)
	require.ErrorIs(t, s.MarkDelivered(ctx, "live-1", minutes(300), nil), store.ErrNotFound)
	// Delivered after it: kept, so a repeated delivery still succeeds.
	require.NoError(t, s.MarkDelivered(ctx, "recent-1", minutes(300), nil))
	// Pending and dead: kept, however old.
	require.Equal(t, []string{"busy-1"}, due(t, s, minutes(300), 0))
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	equal(t, store.OutboxCounts{Dead: 1, LastError: "410 gone"}, stats["n2"])

	incs, err = s.Incidents(ctx, "ws")
	require.NoError(t, err)
	equal(t, []store.Incident{busy, recent}, incs, "old is resolved before the cutoff and has nothing pending")
	incs, err = s.Incidents(ctx, "other")
	require.NoError(t, err)
	equal(t, []store.Incident{live}, incs, "open incidents are never pruned")
	st, err := s.NotifierState(ctx, "n2", old.Key)
	require.NoError(t, err)
	require.Nil(t, st, "the pruned incident's notifier state went with it")
	st, err = s.NotifierState(ctx, "n1", busy.Key)
	require.NoError(t, err)
	require.Equal(t, []byte("busy"), st)
}
