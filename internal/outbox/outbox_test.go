package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestDeliversWithNotifierState(t *testing.T) {
	slack := newNotifier("slack")
	h := newHarness(t, nil, nil, Options{}, slack)
	h.store.add(
		msg("a1", "slack", "inc-a", notify.EventOpen, t0),
		msg("a2", "slack", "inc-a", notify.EventUpdate, t0.Add(time.Second)),
		msg("b1", "slack", "inc-b", notify.EventOpen, t0.Add(time.Second)),
	)
	h.clock.Advance(time.Minute)
	h.start()
	h.settle()

	require.Equal(t, []call{
		{ID: "a1", Event: notify.EventOpen, State: ""},
		{ID: "b1", Event: notify.EventOpen, State: ""},
		{ID: "a2", Event: notify.EventUpdate, State: "|a1"}, // the state a1's delivery returned
	}, slack.getCalls())
	for _, id := range []string{"a1", "a2", "b1"} {
		require.Equal(t, t0.Add(time.Minute), h.store.get(id).DeliveredAt, id)
	}
	require.Equal(t, "|a1|a2", h.store.notifierState("slack", "inc-a"))
	require.Equal(t, "|b1", h.store.notifierState("slack", "inc-b"))
	require.Equal(t, []string{"slack:delivered", "slack:delivered", "slack:delivered"}, h.results.get())
	require.Equal(t, map[string]int{"slack": 0}, h.results.lastPending())
	require.Len(t, h.logs.find(t, "INFO", "notification delivered"), 3)
}

func TestSaveStateSurvivesAFailedAttempt(t *testing.T) {
	// A Slack notifier posts the parent message, saves its ts, then fails
	// on the thread reply: the retry must find the ts, not post a second
	// parent.
	slack := newNotifier("slack")
	var mu sync.Mutex
	posted := 0
	slack.setFn(func(_ context.Context, m notify.Message, state []byte, save func([]byte) error) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(state) == 0 {
			posted++
			if err := save([]byte("ts=1700000000.000100")); err != nil {
				return nil, err
			}
			return nil, notify.Retryable(errors.New("slack: thread reply: 500"), 0)
		}
		return append(state, ";replied"...), nil
	})
	h := newHarness(t, nil, nil, Options{}, slack)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	require.Equal(t, "ts=1700000000.000100", h.store.notifierState("slack", "inc-a"))
	require.Equal(t, 1, h.store.get("a1").Attempts)

	h.advance(time.Minute)
	require.Equal(t, 1, posted, "one parent message")
	require.Equal(t, "ts=1700000000.000100", slack.getCalls()[1].State)
	require.Equal(t, "ts=1700000000.000100;replied", h.store.notifierState("slack", "inc-a"))
	require.False(t, h.store.get("a1").DeliveredAt.IsZero())
}

func TestOrderingPerIncident(t *testing.T) {
	slack := newNotifier("slack")
	// a1 fails once: a2 and a3 must wait for it, b1 must not.
	slack.setFn(func(ctx context.Context, m notify.Message, state []byte, save func([]byte) error) ([]byte, error) {
		if m.ID == "a1" && len(slack.getCalls()) == 1 {
			return nil, retryable(0)()
		}
		return []byte(string(state) + "|" + m.ID), nil
	})
	h := newHarness(t, nil, nil, Options{}, slack)
	h.store.add(
		msg("a1", "slack", "inc-a", notify.EventOpen, t0),
		msg("a2", "slack", "inc-a", notify.EventUpdate, t0.Add(1*time.Second)),
		msg("b1", "slack", "inc-b", notify.EventOpen, t0.Add(2*time.Second)),
		msg("a3", "slack", "inc-a", notify.EventResolve, t0.Add(3*time.Second)),
		msg("b2", "slack", "inc-b", notify.EventResolve, t0.Add(4*time.Second)),
	)
	h.clock.Advance(10 * time.Second)
	h.start()
	h.settle()
	require.Equal(t, []string{"a1", "b1", "b2"}, slack.callIDs())
	require.Equal(t, t0.Add(10*time.Second+time.Minute), h.store.get("a1").NextAttempt)
	require.Zero(t, h.store.get("a2").Attempts)

	h.advance(time.Minute)
	require.Equal(t, []string{"a1", "b1", "b2", "a1", "a2", "a3"}, slack.callIDs())
	require.Equal(t, "|a1|a2|a3", h.store.notifierState("slack", "inc-a"))
}

func TestPendingReport(t *testing.T) {
	slack, og := newNotifier("slack"), newNotifier("opsgenie")
	slack.setFn(func(_ context.Context, _ notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
		if len(slack.getCalls()) == 1 {
			return nil, retryable(0)()
		}
		return state, nil
	})
	h := newHarness(t, nil, nil, Options{}, slack, og)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0), msg("a2", "slack", "inc-a", notify.EventUpdate, t0))
	h.start()
	h.settle()
	require.Equal(t, map[string]int{"slack": 2, "opsgenie": 0}, h.results.lastPending())
	h.advance(time.Minute)
	require.Equal(t, map[string]int{"slack": 0, "opsgenie": 0}, h.results.lastPending())
}

func TestSetNotifiers(t *testing.T) {
	slack := newNotifier("slack")
	h := newHarness(t, nil, nil, Options{}, slack)
	h.start()
	h.settle()
	og := newNotifier("opsgenie")
	h.d.SetNotifiers(map[string]notify.Notifier{"slack": slack, "opsgenie": og})
	h.store.add(msg("o1", "opsgenie", "inc-a", notify.EventOpen, t0), msg("s1", "slack", "inc-a", notify.EventOpen, t0))
	h.settle()
	require.Equal(t, []string{"o1"}, og.callIDs())
	require.Equal(t, map[string]int{"slack": 0, "opsgenie": 0}, h.results.lastPending())

	h.d.SetNotifiers(map[string]notify.Notifier{"opsgenie": og})
	h.store.add(msg("s2", "slack", "inc-b", notify.EventOpen, t0))
	h.settle()
	require.True(t, h.store.get("s2").Dead)
	require.Equal(t, map[string]int{"opsgenie": 0}, h.results.lastPending())
}

func TestNew(t *testing.T) {
	_, err := New(Options{})
	require.EqualError(t, err, "outbox: Options.Store is required\noutbox: Options.Logger is required")
	_, err = New(Options{Store: newFakeStore(), Logger: slog.New(slog.DiscardHandler),
		Notifiers: map[string]notify.Notifier{"x": nil}, MaxAttempts: -1, AttemptTimeout: -1})
	require.EqualError(t, err, "outbox: notifier \"x\" is nil\noutbox: Options.MaxAttempts must not be negative\noutbox: Options.AttemptTimeout must not be negative")

	h := newHarness(t, nil, nil, Options{})
	require.Equal(t, DefaultAttemptTimeout, h.d.timeout)
	require.Equal(t, DefaultPollInterval, h.d.poll)
	require.Equal(t, DefaultBatchSize, h.d.batch)
}

func TestResultsAreMetricsLabels(t *testing.T) {
	// OnResult feeds metrics.NotificationResult as is.
	require.Equal(t, metrics.NotificationDelivered, ResultDelivered)
	require.Equal(t, metrics.NotificationRetry, ResultRetry)
	require.Equal(t, metrics.NotificationFailed, ResultFailed)
}

// TestFromDecide runs the pipeline's half: incident.Decide, routing and
// Enqueue write rows that the dispatcher delivers as the very messages
// Decide made.
func TestFromDecide(t *testing.T) {
	finding := drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "update", Attributes: []string{"versioning"}}
	after := store.WorkspaceState{Workspace: "net", Status: drift.StatusDrift, Findings: []drift.Finding{finding}}
	_, msgs := incident.Decide(t0, "run-1", incident.Policy{Owner: "team-net"}, store.WorkspaceState{Workspace: "net"}, after, nil,
		func() string { return "m1" })
	require.Len(t, msgs, 1)
	targets := incident.Routes(nil, []string{"slack", "opsgenie"}, "net", nil)
	rows, err := incident.Enqueue(t0, msgs, targets)
	require.NoError(t, err)

	var got []notify.Message
	var mu sync.Mutex
	record := func(_ context.Context, m notify.Message, s []byte, _ func([]byte) error) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m)
		return s, nil
	}
	slack, og := newNotifier("slack"), newNotifier("opsgenie")
	slack.setFn(record)
	og.setFn(record)
	h := newHarness(t, nil, nil, Options{}, slack, og)
	h.store.add(rows...)
	h.start()
	h.settle()
	require.Len(t, got, 2)
	for _, m := range got {
		require.Empty(t, cmp.Diff(msgs[0], m))
	}
}

// TestExactlyOnce delivers many messages through flaky notifiers while
// other goroutines enqueue and wake, and checks that every message reaches
// its notifier exactly once and each incident's messages arrive in order.
func TestExactlyOnce(t *testing.T) {
	const (
		incidents = 12
		perInc    = 8
	)
	names := []string{"slack", "opsgenie", "webhook"}
	ns := map[string]*fakeNotifier{}
	var list []*fakeNotifier
	for i, name := range names {
		n := newNotifier(name)
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		var mu sync.Mutex
		n.setFn(func(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
			mu.Lock()
			fail := rng.IntN(10) < 3
			mu.Unlock()
			if fail {
				return nil, notify.Retryable(errors.New("flaky"), 0)
			}
			return []byte(m.ID), nil
		})
		ns[name] = n
		list = append(list, n)
	}
	h := newHarness(t, nil, nil, Options{Backoff: func(int) time.Duration { return time.Second }, BatchSize: 7}, list...)
	id := func(n string, inc, seq int) string { return fmt.Sprintf("%s-i%02d-%02d", n, inc, seq) }
	// Half the messages exist at start...
	for inc := range incidents / 2 {
		for seq := range perInc {
			for _, n := range names {
				h.store.add(msg(id(n, inc, seq), n, fmt.Sprintf("inc-%02d", inc), notify.EventUpdate, t0.Add(time.Duration(seq)*time.Millisecond)))
			}
		}
	}
	h.start()
	// ...the rest are enqueued concurrently, one goroutine per incident,
	// each waking the dispatcher, while others wake it for nothing.
	var wg sync.WaitGroup
	for inc := incidents / 2; inc < incidents; inc++ {
		wg.Go(func() {
			for seq := range perInc {
				for _, n := range names {
					h.store.add(msg(id(n, inc, seq), n, fmt.Sprintf("inc-%02d", inc), notify.EventUpdate, t0.Add(time.Duration(seq)*time.Millisecond)))
				}
				h.d.Wake()
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				h.d.Wake()
			}
		})
	}
	wg.Wait()
	h.settle()
	for i := 0; i < 200; i++ {
		undelivered := 0
		for _, m := range h.store.all() {
			if m.DeliveredAt.IsZero() {
				undelivered++
			}
		}
		if undelivered == 0 {
			break
		}
		h.advance(time.Second)
	}
	require.Zero(t, h.store.doubles)
	for _, name := range names {
		n := ns[name]
		n.mu.Lock()
		for inc := range incidents {
			var seqs []string
			for _, d := range n.order {
				if strings.HasPrefix(d, fmt.Sprintf("%s-i%02d-", name, inc)) {
					seqs = append(seqs, d)
				}
			}
			want := make([]string, perInc)
			for seq := range perInc {
				want[seq] = id(name, inc, seq)
				require.Equal(t, 1, n.delivered[want[seq]], want[seq])
			}
			require.Equal(t, want, seqs, "incident %d in order", inc)
		}
		require.Len(t, n.delivered, incidents*perInc)
		n.mu.Unlock()
	}
	for _, m := range h.store.all() {
		require.False(t, m.DeliveredAt.IsZero(), m.ID)
		require.False(t, m.Dead, m.ID)
	}
}
