package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// AlertStore is what AlertConformance tests: one store that is both a
// store.Store (runs are started and pruned through it) and a
// store.AlertStore.
type AlertStore interface {
	store.Store
	store.AlertStore
}

// AlertConformance runs the store.AlertStore contract against stores from
// open, one fresh store per subtest. open must return an empty store and
// close it when the test ends (t.Cleanup).
//
// Beyond the interface's comments, the suite pins these choices:
//   - FinishRunWithOutcome with a nil decide is FinishRun; decide gets the
//     workspace's incidents in every state, and only that workspace's; a
//     failing decide (a panic, or a result the store refuses) leaves the
//     run running and can be retried. Refused: an incident without a key, of
//     another workspace or returned twice; a message whose ID is repeated or
//     already in the outbox, without a notifier or payload, or for an
//     incident the workspace does not have.
//   - A message's zero CreatedAt is the run's FinishedAt and a zero
//     NextAttempt is CreatedAt.
//   - "Oldest" is enqueue order (decide's slice order, then commit order),
//     not CreatedAt. DueMessages' limit 0 means no limit.
//   - Delivered and dead are final: MarkDelivered on a delivered message and
//     MarkFailed on a delivered one succeed and change nothing (state
//     included); a dead message stays dead. Unknown ids are
//     store.ErrNotFound.
//   - Notifier state replaces: a nil state (from MarkDelivered or
//     SaveNotifierState) deletes it, and NotifierState of nothing is nil.
//   - OutboxStats lists every notifier with messages in the outbox, even
//     only delivered ones; LastError is that of the latest MarkFailed.
//   - Incidents("") is open and pending incidents by workspace, then key;
//     Incidents(workspace) is every state, by key.
//   - Prune with an age limit deletes messages delivered before it and
//     incidents resolved before it (with their notifier states) unless a
//     message of theirs is pending; it never deletes pending or dead
//     messages, nor live incidents, and its result counts runs only.
func AlertConformance(t *testing.T, open func(t *testing.T) AlertStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s AlertStore)
	}{
		{"outcome is written with the run", testOutcomeWritten},
		{"decide sees its workspace's incidents", testOutcomeWorkspace},
		{"nil decide is finish run", testOutcomeNil},
		{"a failing decide writes nothing", testOutcomeFails},
		{"consequences are visible with the run, never without", testOutcomeAtomic},
		{"due messages keep each incident's order", testDueOrder},
		{"due messages wait for next attempt", testDueWaits},
		{"enqueue order, not created at, is the age", testDueEnqueueOrder},
		{"a dead message unblocks the next", testDeadUnblocks},
		{"mark delivered is idempotent", testMarkDeliveredIdempotent},
		{"mark failed", testMarkFailed},
		{"unknown messages are not found", testMessageNotFound},
		{"notifier state round trip", testNotifierState},
		{"outbox stats", testOutboxStats},
		{"prune trims delivered messages and resolved incidents", testPruneAlerts},
		{"concurrent producers and deliverers", testAlertConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// payload is a message body; the store treats it as opaque bytes.
func payload(id string) []byte { return fmt.Appendf(nil, `{"id":%q,"event":"open"}`, id) }

// msg is a message as the pipeline enqueues it.
func msg(id, notifier, incidentKey string, created time.Time) store.OutboxMessage {
	return store.OutboxMessage{ID: id, Notifier: notifier, IncidentKey: incidentKey, Payload: payload(id), CreatedAt: created, NextAttempt: created}
}

// incident is an open incident as the pipeline writes it.
func incident(key, workspace string, class string, opened time.Time) store.Incident {
	return store.Incident{
		Key: key, Workspace: workspace, Class: class, State: store.IncidentOpen,
		Observations: 1, OpenedAt: opened, NotifiedAt: opened,
		Fingerprint: drift.Fingerprint(workspace, []drift.Finding{fDrift}), Findings: []drift.Finding{fDrift},
		Severity: "high", SeverityRule: "sg-ingress",
	}
}

// fixed is a decide that ignores its input.
func fixed(changed []store.Incident, enqueue ...store.OutboxMessage) store.Outcome {
	return func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		return changed, enqueue
	}
}

// runWith starts and finishes one drift run with decide.
func runWith(t *testing.T, s AlertStore, id, workspace string, startMin, finishMin int, decide store.Outcome) (before, after store.WorkspaceState) {
	t.Helper()
	r := start(t, s, newRun(id, workspace, minutes(startMin)))
	before, after, err := s.FinishRunWithOutcome(t.Context(), outcome(r, drift.StatusDrift, minutes(finishMin), fDrift), decide)
	require.NoError(t, err)
	return before, after
}

// enqueue finishes a run on workspace ws that (re)opens the incidents the
// messages name and enqueues them.
func enqueue(t *testing.T, s AlertStore, runID, ws string, at int, msgs ...store.OutboxMessage) {
	t.Helper()
	var changed []store.Incident
	for _, m := range msgs {
		if !slices.ContainsFunc(changed, func(in store.Incident) bool { return in.Key == m.IncidentKey }) {
			changed = append(changed, incident(m.IncidentKey, ws, "drift", minutes(at)))
		}
	}
	runWith(t, s, runID, ws, at, at+1, fixed(changed, msgs...))
}

func due(t *testing.T, s AlertStore, now time.Time, limit int) []string {
	t.Helper()
	msgs, err := s.DueMessages(t.Context(), now, limit)
	require.NoError(t, err)
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		require.True(t, m.DeliveredAt.IsZero(), "due message %s is delivered", m.ID)
		require.False(t, m.Dead, "due message %s is dead", m.ID)
		require.False(t, m.NextAttempt.After(now), "due message %s is not due until %s", m.ID, m.NextAttempt)
		out = append(out, m.ID)
	}
	return out
}

func deliver(t *testing.T, s AlertStore, at time.Time, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, s.MarkDelivered(t.Context(), id, at, []byte("state of "+id)))
	}
}

func testOutcomeWritten(t *testing.T, s AlertStore) {
	ctx := t.Context()
	inc := incident("dw-drift-net", "net", "drift", minutes(1))
	inc.OpenedAt = t0 // nanoseconds and a zone: must round-trip as an instant
	m1 := msg("m1/slack", "slack", inc.Key, minutes(1))
	m2 := msg("m1/pager", "pager", inc.Key, time.Time{}) // the run's finish
	m2.NextAttempt = time.Time{}                         // its CreatedAt
	m2.Attempts, m2.LastError, m2.Dead = 3, "ignored", true

	r1 := start(t, s, newRun("r1", "net", t0))
	calls := 0
	before, after, err := s.FinishRunWithOutcome(ctx, outcome(r1, drift.StatusDrift, minutes(1), fDrift),
		func(b, a store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			calls++
			equal(t, store.WorkspaceState{Workspace: "net"}, b)
			require.Equal(t, drift.StatusDrift, a.Status)
			require.Equal(t, "r1", a.LastRunID)
			require.Empty(t, incidents)
			// decide gets copies: scribbling on them changes nothing.
			a.Findings[0].Address = "scribbled"
			return []store.Incident{inc}, []store.OutboxMessage{m1, m2}
		})
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	equal(t, store.WorkspaceState{Workspace: "net"}, before)
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	equal(t, st, after, "FinishRunWithOutcome returns the stored state")
	require.Equal(t, fDrift.Address, after.Findings[0].Address)
	got, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	require.Equal(t, drift.StatusDrift, got.Status)

	incs, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	equal(t, []store.Incident{inc}, incs)
	require.True(t, incs[0].OpenedAt.Equal(t0))
	all, err := s.Incidents(ctx, "")
	require.NoError(t, err)
	equal(t, []store.Incident{inc}, all)

	msgs, err := s.DueMessages(ctx, minutes(1), 0)
	require.NoError(t, err)
	wantM2 := m2
	wantM2.CreatedAt, wantM2.NextAttempt = minutes(1), minutes(1)
	wantM2.Attempts, wantM2.LastError, wantM2.Dead = 0, "", false
	equal(t, []store.OutboxMessage{m1, wantM2}, msgs)

	// The next run sees the stored incident and the new state.
	resolved := inc
	resolved.State = store.IncidentResolved
	resolved.ResolvedAt = minutes(11)
	resolved.Observations = 0
	r2 := start(t, s, newRun("r2", "net", minutes(10)))
	before, _, err = s.FinishRunWithOutcome(ctx, outcome(r2, drift.StatusClean, minutes(11)),
		func(b, a store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			equal(t, st, b)
			require.Equal(t, drift.StatusClean, a.Status)
			equal(t, []store.Incident{inc}, incidents)
			return []store.Incident{resolved}, []store.OutboxMessage{msg("m2/slack", "slack", inc.Key, minutes(11))}
		})
	require.NoError(t, err)
	equal(t, st, before)
	incs, err = s.Incidents(ctx, "net")
	require.NoError(t, err)
	equal(t, []store.Incident{resolved}, incs)
	all, err = s.Incidents(ctx, "")
	require.NoError(t, err)
	require.Empty(t, all, "a resolved incident is not listed among the live ones")
	require.Equal(t, []string{"m1/slack", "m1/pager"}, due(t, s, minutes(11), 0),
		"m2/slack waits behind m1/slack")
}

func testOutcomeWorkspace(t *testing.T, s AlertStore) {
	ctx := t.Context()
	a := incident("dw-drift-a", "a", "drift", minutes(1))
	aErr := incident("dw-errored-a", "a", "errored", minutes(1))
	aErr.State, aErr.ResolvedAt = store.IncidentResolved, minutes(2)
	aPend := incident("dw-forbidden-a", "a", "forbidden", minutes(1))
	aPend.State, aPend.NotifiedAt = store.IncidentPending, time.Time{}
	b := incident("dw-drift-b", "b", "drift", minutes(1))
	b.Workspace = "" // taken as the run's
	runWith(t, s, "a1", "a", 0, 1, fixed([]store.Incident{aErr, a, aPend}))
	runWith(t, s, "b1", "b", 0, 1, fixed([]store.Incident{b}))
	b.Workspace = "b"

	runWith(t, s, "a2", "a", 2, 3, func(_, _ store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		var keys []string
		for _, in := range incidents {
			keys = append(keys, in.Key)
		}
		slices.Sort(keys)
		require.Equal(t, []string{a.Key, aErr.Key, aPend.Key}, keys, "all of a's incidents, whatever their state, and only a's")
		return nil, nil
	})

	got, err := s.Incidents(ctx, "a")
	require.NoError(t, err)
	equal(t, []store.Incident{a, aErr, aPend}, got, "by key")
	got, err = s.Incidents(ctx, "")
	require.NoError(t, err)
	equal(t, []store.Incident{a, aPend, b}, got, "live ones, by workspace then key")
	got, err = s.Incidents(ctx, "nope")
	require.NoError(t, err)
	require.Empty(t, got)
}

func testOutcomeNil(t *testing.T, s AlertStore) {
	ctx := t.Context()
	r := start(t, s, newRun("r1", "net", t0))
	before, after, err := s.FinishRunWithOutcome(ctx, outcome(r, drift.StatusDrift, minutes(1), fDrift), nil)
	require.NoError(t, err)
	equal(t, store.WorkspaceState{Workspace: "net"}, before)
	st, err := s.Workspace(ctx, "net")
	require.NoError(t, err)
	equal(t, st, after)
	incs, err := s.Incidents(ctx, "net")
	require.NoError(t, err)
	require.Empty(t, incs)
	require.Empty(t, due(t, s, minutes(100), 0))
}

func testOutcomeFails(t *testing.T, s AlertStore) {
	ctx := t.Context()
	// Something to leave untouched: a's open incident and its message, and
	// b's incident.
	inA := incident("dw-drift-a", "a", "drift", minutes(1))
	runWith(t, s, "a0", "a", 0, 1, fixed([]store.Incident{inA}, msg("m0", "slack", inA.Key, minutes(1))))
	inB := incident("dw-drift-b", "b", "drift", minutes(1))
	runWith(t, s, "b0", "b", 0, 1, fixed([]store.Incident{inB}))

	snapshot := func() (store.WorkspaceState, []store.Incident, []store.Incident, []store.OutboxMessage, map[string]store.OutboxCounts) {
		st, err := s.Workspace(ctx, "a")
		require.NoError(t, err)
		ia, err := s.Incidents(ctx, "a")
		require.NoError(t, err)
		all, err := s.Incidents(ctx, "")
		require.NoError(t, err)
		msgs, err := s.DueMessages(ctx, minutes(1000), 0)
		require.NoError(t, err)
		stats, err := s.OutboxStats(ctx)
		require.NoError(t, err)
		return st, ia, all, msgs, stats
	}

	fresh := incident("dw-forbidden-a", "a", "forbidden", minutes(5))
	good := msg("m1", "slack", fresh.Key, minutes(5))
	for i, tc := range []struct {
		name   string
		decide store.Outcome
		want   string
	}{
		{"panic", func(_, _ store.WorkspaceState, _ []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			panic("decide is broken")
		}, "decide is broken"},
		{"panic after work", func(_, _ store.WorkspaceState, incs []store.Incident) ([]store.Incident, []store.OutboxMessage) {
			var nilMap map[string]int
			nilMap[incs[0].Key]++
			return nil, nil
		}, "panic"},
		{"duplicate message ids", fixed([]store.Incident{fresh}, good, msg("m1", "pager", fresh.Key, minutes(5))), "m1"},
		{"message id already in the outbox", fixed([]store.Incident{fresh}, good, msg("m0", "slack", fresh.Key, minutes(5))), "m0"},
		{"message without notifier", fixed([]store.Incident{fresh}, good, msg("m2", "", fresh.Key, minutes(5))), "m2"},
		{"message without payload", fixed([]store.Incident{fresh}, good, store.OutboxMessage{ID: "m2", Notifier: "slack", IncidentKey: fresh.Key}), "m2"},
		{"message for an unknown incident", fixed([]store.Incident{fresh}, good, msg("m2", "slack", "dw-nope", minutes(5))), "dw-nope"},
		{"message for another workspace's incident", fixed([]store.Incident{fresh}, good, msg("m2", "slack", inB.Key, minutes(5))), inB.Key},
		{"incident without key", fixed([]store.Incident{fresh, incident("", "a", "errored", minutes(5))}, good), "key"},
		{"incident without state", fixed([]store.Incident{fresh, func() store.Incident {
			in := incident("dw-errored-a", "a", "errored", minutes(5))
			in.State = ""
			return in
		}()}, good), "dw-errored-a"},
		{"incident of another workspace", fixed([]store.Incident{fresh, incident("dw-x", "b", "drift", minutes(5))}, good), "dw-x"},
		{"another workspace's incident key", fixed([]store.Incident{fresh, incident(inB.Key, "a", "drift", minutes(5))}, good), inB.Key},
		{"incident returned twice", fixed([]store.Incident{fresh, fresh}, good), fresh.Key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st0, ia0, all0, msgs0, stats0 := snapshot()
			r := start(t, s, newRun(fmt.Sprintf("a-fail-%02d", i), "a", minutes(10+i)))
			_, _, err := s.FinishRunWithOutcome(ctx, outcome(r, drift.StatusForbidden, minutes(11+i), fForbidden), tc.decide)
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			t.Logf("error: %v", err)

			got, err := s.Run(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, store.RunRunning, got.Status, "the run was finished without its consequences")
			st, ia, all, msgs, stats := snapshot()
			equal(t, st0, st, "state")
			equal(t, ia0, ia, "a's incidents")
			equal(t, all0, all, "live incidents")
			equal(t, msgs0, msgs, "outbox")
			equal(t, stats0, stats, "outbox stats")
			inB2, err := s.Incidents(ctx, "b")
			require.NoError(t, err)
			equal(t, []store.Incident{inB}, inB2, "b's incident")

			// Nothing is left half done or locked: the run can finish now.
			_, after, err := s.FinishRunWithOutcome(ctx, outcome(r, drift.StatusForbidden, minutes(11+i), fForbidden), fixed([]store.Incident{fresh}))
			require.NoError(t, err)
			require.Equal(t, r.ID, after.LastRunID)
		})
	}
}

// testOutcomeAtomic finishes runs while readers check, in both read orders,
// that a run is finished exactly when its incident and message exist.
func testOutcomeAtomic(t *testing.T, s AlertStore) {
	ctx := t.Context()
	const runs = 30
	key := func(i int) string { return fmt.Sprintf("k-%03d", i) }
	runID := func(i int) string { return fmt.Sprintf("r-%03d", i) }
	now := minutes(10_000)

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	finishedRuns := func() (map[string]bool, error) {
		rs, err := s.Runs(ctx, "net", 0)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, r := range rs {
			if r.Status != store.RunRunning {
				out[r.ID] = true
			}
		}
		return out, nil
	}
	consequences := func() (incs, msgs map[string]bool, err error) {
		is, err := s.Incidents(ctx, "net")
		if err != nil {
			return nil, nil, err
		}
		ms, err := s.DueMessages(ctx, now, 0)
		if err != nil {
			return nil, nil, err
		}
		incs, msgs = map[string]bool{}, map[string]bool{}
		for _, in := range is {
			incs[in.Key] = true
		}
		for _, m := range ms {
			msgs[m.ID] = true
		}
		return incs, msgs, nil
	}
	for reader := range 2 {
		wg.Go(func() {
			errs[reader] = func() error {
				for {
					select {
					case <-done:
						return nil
					default:
					}
					if reader == 0 {
						// Finished first: its consequences must be there.
						fin, err := finishedRuns()
						if err != nil {
							return err
						}
						incs, msgs, err := consequences()
						if err != nil {
							return err
						}
						for i := range runs {
							if fin[runID(i)] && (!incs[key(i)] || !msgs[key(i)]) {
								return fmt.Errorf("run %s is finished without its incident or message", runID(i))
							}
						}
					} else {
						// Consequences first: their run must be finished.
						incs, msgs, err := consequences()
						if err != nil {
							return err
						}
						fin, err := finishedRuns()
						if err != nil {
							return err
						}
						for i := range runs {
							if (incs[key(i)] || msgs[key(i)]) && !fin[runID(i)] {
								return fmt.Errorf("run %s's incident or message exists, the run is not finished", runID(i))
							}
						}
					}
				}
			}()
		})
	}
	for i := range runs {
		in := incident(key(i), "net", "drift", minutes(i))
		enqueue(t, s, runID(i), "net", i, msg(key(i), "slack", in.Key, minutes(i)))
	}
	close(done)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "reader %d", i)
	}
	require.Len(t, due(t, s, now, 0), runs)
}
