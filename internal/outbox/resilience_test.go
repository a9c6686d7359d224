package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
)

func TestHangingNotifierDoesNotBlockOthers(t *testing.T) {
	hang := newNotifier("hang")
	hang.entered = make(chan string, 10)
	hang.setFn(func(ctx context.Context, _ notify.Message, _ []byte, _ func([]byte) error) ([]byte, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("post: %w", ctx.Err())
	})
	slack := newNotifier("slack")
	h := newHarness(t, nil, nil, Options{}, hang, slack)
	h.store.add(
		msg("h1", "hang", "inc-a", notify.EventOpen, t0),
		msg("s1", "slack", "inc-a", notify.EventOpen, t0.Add(time.Second)),
		msg("s2", "slack", "inc-a", notify.EventUpdate, t0.Add(2*time.Second)),
	)
	h.clock.Advance(2 * time.Second)
	h.start()
	require.Equal(t, "h1", <-hang.entered)
	require.Eventually(t, func() bool { return !h.store.get("s2").DeliveredAt.IsZero() }, 10*time.Second, time.Millisecond,
		"slack delivers while hang is stuck")
	require.Zero(t, h.store.get("h1").Attempts)

	// Messages enqueued meanwhile for slack still go.
	h.store.add(msg("s3", "slack", "inc-b", notify.EventOpen, h.clock.Now()))
	h.d.Wake()
	require.Eventually(t, func() bool { return !h.store.get("s3").DeliveredAt.IsZero() }, 10*time.Second, time.Millisecond)

	h.advance(DefaultAttemptTimeout) // the attempt times out on the dispatcher's clock
	h1 := h.store.get("h1")
	require.Equal(t, 1, h1.Attempts)
	require.False(t, h1.Dead, "a timeout is retryable")
	require.Contains(t, h1.LastError, "attempt timed out after 30s: post: context canceled")
	require.Equal(t, t0.Add(2*time.Second+DefaultAttemptTimeout+time.Minute), h1.NextAttempt)
	require.Contains(t, h.results.get(), "hang:retry")
}

func TestAttemptDeadlineIsVisibleToTheNotifier(t *testing.T) {
	slack := newNotifier("slack")
	var deadline time.Time
	var ok bool
	slack.setFn(func(ctx context.Context, _ notify.Message, s []byte, _ func([]byte) error) ([]byte, error) {
		deadline, ok = ctx.Deadline()
		return s, nil
	})
	h := newHarness(t, nil, nil, Options{AttemptTimeout: 7 * time.Second}, slack)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	before := time.Now()
	h.settle()
	require.True(t, ok, "an HTTP client sees the attempt's deadline")
	require.WithinDuration(t, before.Add(7*time.Second), deadline, 5*time.Second)
}

func TestPanickingNotifierIsRetried(t *testing.T) {
	slack := newNotifier("slack")
	slack.setFn(func(context.Context, notify.Message, []byte, func([]byte) error) ([]byte, error) {
		panic("index out of range")
	})
	h := newHarness(t, nil, nil, Options{}, slack)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	m := h.store.get("a1")
	require.Equal(t, 1, m.Attempts)
	require.False(t, m.Dead)
	require.Equal(t, "notifier panicked: index out of range", m.LastError)
	require.Len(t, h.logs.find(t, "ERROR", "notifier panicked"), 1)
}

func TestStoreFailures(t *testing.T) {
	t.Run("due messages", func(t *testing.T) {
		slack := newNotifier("slack")
		h := newHarness(t, nil, nil, Options{}, slack)
		h.store.setFail("DueMessages", errors.New("database is locked"))
		h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
		h.start()
		h.settle()
		require.NotEmpty(t, h.logs.find(t, "ERROR", "cannot read the outbox"))
		h.store.setFail("DueMessages", nil)
		h.advance(storeRetry) // retried soon, not at the next poll
		require.False(t, h.store.get("a1").DeliveredAt.IsZero())
	})
	t.Run("notifier state", func(t *testing.T) {
		slack := newNotifier("slack")
		h := newHarness(t, nil, nil, Options{}, slack)
		h.store.setFail("NotifierState", errors.New("disk I/O error"))
		h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0), msg("b1", "slack", "inc-b", notify.EventOpen, t0))
		h.start()
		h.settle()
		require.Empty(t, slack.getCalls(), "no delivery without the state")
		require.Zero(t, h.store.get("a1").Attempts, "not the notifier's failure")
		h.store.setFail("NotifierState", nil)
		h.advance(storeRetry)
		require.Equal(t, []string{"a1", "b1"}, slack.callIDs())
	})
	t.Run("mark delivered: recorded later, never sent twice", func(t *testing.T) {
		// A full disk after the notifier accepted the message: the
		// delivery is kept and recorded once the store is back, with the
		// notifier's state and the time it was delivered; sending it again
		// would page twice.
		slack := newNotifier("slack")
		slack.setFn(func(context.Context, notify.Message, []byte, func([]byte) error) ([]byte, error) {
			return []byte("ts-1"), nil
		})
		h := newHarness(t, nil, nil, Options{}, slack)
		h.store.setFail("MarkDelivered", errors.New("disk full"))
		h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0), msg("a2", "slack", "inc-a", notify.EventUpdate, t0))
		h.start()
		h.settle()
		delivered := h.clock.Now()
		require.Len(t, h.logs.find(t, "ERROR", "delivered, but cannot record it yet"), 1)
		h.advance(storeRetry) // still failing: retried, not sent
		require.Len(t, h.logs.find(t, "ERROR", "delivered, but cannot record it yet"), 2)
		require.Equal(t, []string{"a1"}, slack.callIDs())
		require.True(t, h.store.get("a1").DeliveredAt.IsZero())

		h.store.setFail("MarkDelivered", nil)
		h.advance(storeRetry)
		require.Equal(t, []string{"a1", "a2"}, slack.callIDs(), "a1 never sent again; a2 follows it")
		require.Equal(t, delivered, h.store.get("a1").DeliveredAt)
		require.Equal(t, "ts-1", h.store.notifierState("slack", "inc-a"))
		require.Equal(t, []string{"slack:delivered", "slack:delivered"}, h.results.get())
	})
	t.Run("save notifier state: postponed, not given up", func(t *testing.T) {
		// A notifier that cannot save its state stops with whatever error
		// it makes of it; the message must neither die nor count an
		// attempt: the store failed, not the notifier.
		slack := newNotifier("slack")
		slack.setFn(func(_ context.Context, _ notify.Message, _ []byte, save func([]byte) error) ([]byte, error) {
			if err := save([]byte("ts-1")); err != nil {
				return nil, fmt.Errorf("post: %w", err)
			}
			return []byte("ts-1"), nil
		})
		h := newHarness(t, nil, nil, Options{}, slack)
		h.store.setFail("SaveNotifierState", errors.New("disk full"))
		h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
		h.start()
		h.settle()
		m := h.store.get("a1")
		require.False(t, m.Dead)
		require.Zero(t, m.Attempts)
		require.Len(t, h.logs.find(t, "ERROR", "cannot save notifier state; delivery postponed"), 1)
		h.store.setFail("SaveNotifierState", nil)
		h.advance(storeRetry)
		require.False(t, h.store.get("a1").DeliveredAt.IsZero())
		require.Equal(t, "ts-1", h.store.notifierState("slack", "inc-a"))
	})
}

// A replica that may no longer lead (its fence fails) hands nothing to
// its notifiers and counts no attempt; it delivers once the fence passes.
// The fence is Options.Fence, or else the store's LeadHeld.
func TestFence(t *testing.T) {
	for _, byStore := range []bool{false, true} {
		t.Run(map[bool]string{false: "Options.Fence", true: "the store's LeadHeld"}[byStore], func(t *testing.T) { testFence(t, byStore) })
	}
}

func testFence(t *testing.T, byStore bool) {
	slack := newNotifier("slack")
	var lost atomic.Bool
	lost.Store(true)
	fence := func(context.Context) error {
		if lost.Load() {
			return errors.New("the leadership lock is no longer this replica's")
		}
		return nil
	}
	st, o := newFakeStore(), Options{Fence: fence}
	if byStore {
		st.leadHeld, o = fence, Options{}
	}
	h := newHarness(t, st, nil, o, slack)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	require.Empty(t, slack.getCalls(), "nothing sent while another replica may lead")
	m := h.store.get("a1")
	require.Zero(t, m.Attempts)
	require.True(t, m.DeliveredAt.IsZero())
	require.Len(t, h.logs.find(t, "WARN", "not delivering: this replica may no longer lead"), 1)
	lost.Store(false)
	h.advance(storeRetry)
	require.Equal(t, []string{"a1"}, slack.callIDs())
	require.False(t, h.store.get("a1").DeliveredAt.IsZero())
}
