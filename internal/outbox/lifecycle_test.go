package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/schedule/scheduletest"
)

func TestRestart(t *testing.T) {
	st := newFakeStore()
	clock := scheduletest.NewFakeClock(t0)
	var ids []string
	for i := range 4 {
		for j, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate, notify.EventResolve} {
			for _, n := range []string{"slack", "opsgenie"} {
				id := fmt.Sprintf("%s-%d-%d", n, i, j)
				ids = append(ids, id)
				st.add(msg(id, n, fmt.Sprintf("inc-%d", i), ev, t0.Add(time.Duration(j)*time.Second)))
			}
		}
	}
	clock.Advance(time.Minute)

	// The first process: Slack works, OpsGenie is down.
	slack1, og1 := newNotifier("slack"), newNotifier("opsgenie")
	og1.setFn(failing(100, retryable(0)))
	h1 := newHarness(t, st, clock, Options{}, slack1, og1)
	h1.start()
	h1.settle()
	h1.stop()
	for _, m := range st.all() {
		if m.Notifier == "slack" {
			require.False(t, m.DeliveredAt.IsZero(), m.ID)
		} else {
			require.True(t, m.DeliveredAt.IsZero(), m.ID)
		}
	}
	require.Len(t, og1.getCalls(), 4, "one head per incident tried")

	// The second process finds the retries in the store (it never scheduled
	// them) through its poll, and OpsGenie is back.
	slack2, og2 := newNotifier("slack"), newNotifier("opsgenie")
	h2 := newHarness(t, st, clock, Options{PollInterval: time.Minute}, slack2, og2)
	h2.start()
	h2.settle()
	require.Empty(t, og2.getCalls(), "retries are not due yet")
	h2.advance(time.Minute)
	for _, m := range st.all() {
		require.False(t, m.DeliveredAt.IsZero(), m.ID)
	}
	require.Empty(t, slack2.getCalls(), "nothing delivered twice")
	delivered := map[string]int{}
	for _, n := range []*fakeNotifier{slack1, og1, slack2, og2} {
		for id, c := range n.delivered {
			delivered[id] += c
		}
	}
	for _, id := range ids {
		require.Equal(t, 1, delivered[id], id)
	}
	require.Equal(t, []string{"opsgenie-0-0", "opsgenie-1-0", "opsgenie-2-0", "opsgenie-3-0"}, og2.order[:4])
	require.Zero(t, st.doubles)
}

func TestShutdownMidDelivery(t *testing.T) {
	t.Run("an attempt cut short is not a failure", func(t *testing.T) {
		og := newNotifier("opsgenie")
		og.entered = make(chan string, 1)
		og.setFn(func(ctx context.Context, _ notify.Message, _ []byte, _ func([]byte) error) ([]byte, error) {
			<-ctx.Done()
			return nil, notify.Retryable(ctx.Err(), 0)
		})
		h := newHarness(t, nil, nil, Options{}, og)
		h.store.add(msg("a1", "opsgenie", "inc-a", notify.EventOpen, t0))
		h.start()
		<-og.entered
		h.stop()
		m := h.store.get("a1")
		require.Zero(t, m.Attempts)
		require.Empty(t, m.LastError)
		require.Empty(t, h.results.get())
		require.Len(t, h.logs.find(t, "INFO", "delivery interrupted by shutdown"), 1)
	})
	t.Run("a delivery that completes during shutdown is recorded", func(t *testing.T) {
		og := newNotifier("opsgenie")
		og.entered = make(chan string, 1)
		og.setFn(func(ctx context.Context, _ notify.Message, _ []byte, save func([]byte) error) ([]byte, error) {
			<-ctx.Done()
			// The side effect happened before the cancellation landed.
			if err := save([]byte("alert-id")); err != nil {
				return nil, err
			}
			return []byte("alert-id;done"), nil
		})
		h := newHarness(t, nil, nil, Options{}, og)
		h.store.add(msg("a1", "opsgenie", "inc-a", notify.EventOpen, t0))
		h.start()
		<-og.entered
		h.stop()
		require.False(t, h.store.get("a1").DeliveredAt.IsZero())
		require.Equal(t, "alert-id;done", h.store.notifierState("opsgenie", "inc-a"))
	})
}

func TestPollFindsMessagesWithoutWake(t *testing.T) {
	slack := newNotifier("slack")
	h := newHarness(t, nil, nil, Options{PollInterval: 30 * time.Second}, slack)
	h.start()
	h.settle()
	// Left by a previous process with a retry time this one never saw, or
	// enqueued by someone who forgot to Wake.
	m := msg("a1", "slack", "inc-a", notify.EventOpen, t0)
	m.NextAttempt = t0.Add(45 * time.Second)
	h.store.add(m)
	h.advance(30 * time.Second)
	require.Empty(t, slack.getCalls())
	h.advance(30 * time.Second)
	require.Equal(t, t0.Add(time.Minute), h.store.get("a1").DeliveredAt)
}

func TestRunTwice(t *testing.T) {
	h := newHarness(t, nil, nil, Options{})
	h.start()
	h.settle()
	require.EqualError(t, h.d.Run(t.Context()), "outbox: dispatcher is already running")
	h.stop()
	// Run may start again after it returned.
	h.start()
	h.settle()
}

func TestWakeNeverBlocks(t *testing.T) {
	h := newHarness(t, nil, nil, Options{})
	for range 10 {
		h.d.Wake()
	}
}
