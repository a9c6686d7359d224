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
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/metrics"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/schedule/scheduletest"
	"github.com/driftwatch/driftwatch/internal/store"
)

func retryable(after time.Duration) func() error {
	return func() error { return notify.Retryable(errors.New("slack: 503 service unavailable"), after) }
}

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

func TestBackoff(t *testing.T) {
	slack := newNotifier("slack")
	slack.setFn(failing(3, retryable(0)))
	var attempts []int
	var mu sync.Mutex
	backoff := func(attempt int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, attempt)
		return time.Duration(attempt) * 10 * time.Second
	}
	h := newHarness(t, nil, nil, Options{Backoff: backoff}, slack)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	m := h.store.get("a1")
	require.Equal(t, 1, m.Attempts)
	require.Equal(t, t0.Add(10*time.Second), m.NextAttempt)
	require.Equal(t, "slack: 503 service unavailable", m.LastError)

	h.quiet(9 * time.Second)
	require.Len(t, slack.getCalls(), 1, "not before its backoff")
	h.advance(time.Second) // the dispatcher wakes itself for the retry
	require.Equal(t, 2, h.store.get("a1").Attempts)
	require.Equal(t, t0.Add(30*time.Second), h.store.get("a1").NextAttempt)

	h.advance(20 * time.Second)
	require.Equal(t, t0.Add(60*time.Second), h.store.get("a1").NextAttempt)
	h.advance(30 * time.Second)
	require.Equal(t, t0.Add(60*time.Second), h.store.get("a1").DeliveredAt)
	require.Equal(t, []int{1, 2, 3}, attempts)
	require.Equal(t, []string{"slack:retry", "slack:retry", "slack:retry", "slack:delivered"}, h.results.get())
	warns := h.logs.find(t, "WARN", "notification failed; will retry")
	require.Len(t, warns, 3)
	require.Equal(t, "a1", warns[0]["message_id"])
	require.Equal(t, "inc-a", warns[0]["incident"])
	require.Equal(t, "slack", warns[0]["notifier"])
	require.EqualValues(t, 1, warns[0]["attempt"])
}

func TestDefaultBackoff(t *testing.T) {
	for attempt := -1; attempt <= 30; attempt++ {
		base := MinBackoff
		for i := 1; i < attempt && base < MaxBackoff; i++ {
			base *= 2
		}
		base = min(base, MaxBackoff)
		hi := min(base+base/4, MaxBackoff)
		seen := map[time.Duration]bool{}
		for range 200 {
			d := DefaultBackoff(attempt)
			require.GreaterOrEqual(t, d, base, "attempt %d", attempt)
			require.LessOrEqual(t, d, hi, "attempt %d", attempt)
			seen[d] = true
		}
		if base < MaxBackoff {
			require.Greater(t, len(seen), 1, "attempt %d has jitter", attempt)
		}
	}
	require.Less(t, DefaultBackoff(1), 7*time.Second)
	require.Equal(t, MaxBackoff, DefaultBackoff(1000))
}

func TestRetryAfter(t *testing.T) {
	t.Run("longer than the backoff: honoured, and the whole notifier waits", func(t *testing.T) {
		slack := newNotifier("slack")
		slack.setFn(func(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
			if len(slack.getCalls()) == 1 {
				return nil, notify.Retryable(errors.New("slack: 429 too many requests"), 2*time.Minute)
			}
			return state, nil
		})
		h := newHarness(t, nil, nil, Options{Backoff: func(int) time.Duration { return 10 * time.Second }}, slack)
		h.store.add(msg("x", "slack", "inc-x", notify.EventOpen, t0), msg("y", "slack", "inc-y", notify.EventOpen, t0.Add(time.Second)))
		h.clock.Advance(time.Second)
		h.start()
		h.settle()
		require.Equal(t, []string{"x"}, slack.callIDs(), "y waits too: a 429 is about the API")
		require.Equal(t, t0.Add(time.Second+2*time.Minute), h.store.get("x").NextAttempt)

		h.quiet(time.Minute)
		require.Equal(t, []string{"x"}, slack.callIDs())
		h.advance(time.Minute)
		require.Equal(t, []string{"x", "y", "x"}, slack.callIDs(), "fresh messages before retries")
		require.Equal(t, 2, len(h.logs.find(t, "INFO", "notification delivered")))
		require.EqualValues(t, float64(2*time.Minute), h.logs.find(t, "WARN", "notification failed")[0]["retry_after"])
	})
	t.Run("shorter than the backoff: the backoff wins for the message", func(t *testing.T) {
		slack := newNotifier("slack")
		slack.setFn(func(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
			if m.ID == "x" && len(slack.getCalls()) == 1 {
				return nil, notify.Retryable(errors.New("slack: 429"), time.Second)
			}
			return state, nil
		})
		h := newHarness(t, nil, nil, Options{Backoff: func(int) time.Duration { return 10 * time.Second }}, slack)
		h.store.add(msg("x", "slack", "inc-x", notify.EventOpen, t0), msg("y", "slack", "inc-y", notify.EventOpen, t0))
		h.start()
		h.settle()
		require.Equal(t, []string{"x"}, slack.callIDs())
		require.Equal(t, t0.Add(10*time.Second), h.store.get("x").NextAttempt)
		h.advance(time.Second) // the pause ends: y goes
		require.Equal(t, []string{"x", "y"}, slack.callIDs())
		h.advance(9 * time.Second)
		require.Equal(t, []string{"x", "y", "x"}, slack.callIDs())
	})
	t.Run("capped", func(t *testing.T) {
		slack := newNotifier("slack")
		slack.setFn(failing(1, func() error { return notify.Retryable(errors.New("slack: 429"), 1000*time.Hour) }))
		h := newHarness(t, nil, nil, Options{}, slack)
		h.store.add(msg("x", "slack", "inc-x", notify.EventOpen, t0))
		h.start()
		h.settle()
		require.Equal(t, t0.Add(MaxRetryAfter), h.store.get("x").NextAttempt)
	})
}

func TestPermanentErrorIsDead(t *testing.T) {
	og := newNotifier("opsgenie")
	og.setFn(func(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
		if m.ID == "a1" {
			return nil, errors.New("opsgenie: 422 unprocessable entity: message is too long")
		}
		return state, nil
	})
	h := newHarness(t, nil, nil, Options{}, og)
	h.store.add(msg("a1", "opsgenie", "inc-a", notify.EventOpen, t0), msg("a2", "opsgenie", "inc-a", notify.EventResolve, t0.Add(time.Second)))
	h.clock.Advance(time.Second)
	h.start()
	h.settle()
	a1 := h.store.get("a1")
	require.True(t, a1.Dead)
	require.Equal(t, 1, a1.Attempts)
	require.Equal(t, "opsgenie: 422 unprocessable entity: message is too long", a1.LastError)
	require.False(t, h.store.get("a2").DeliveredAt.IsZero(), "a dead message does not hold up its incident")
	require.Equal(t, []string{"opsgenie:failed", "opsgenie:delivered"}, h.results.get())
	errs := h.logs.find(t, "ERROR", "notification dropped")
	require.Len(t, errs, 1)
	require.Equal(t, "a1", errs[0]["message_id"])
	require.Contains(t, errs[0]["msg"], "permanent error")
	require.Equal(t, a1.LastError, errs[0]["err"])
}

func TestMaxAttempts(t *testing.T) {
	og := newNotifier("opsgenie")
	og.setFn(failing(100, retryable(0)))
	h := newHarness(t, nil, nil, Options{MaxAttempts: 3}, og)
	h.store.add(msg("a1", "opsgenie", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	h.advance(time.Minute)
	require.False(t, h.store.get("a1").Dead)
	h.advance(time.Minute)
	m := h.store.get("a1")
	require.True(t, m.Dead)
	require.Equal(t, 3, m.Attempts)
	require.Equal(t, []string{"opsgenie:retry", "opsgenie:retry", "opsgenie:failed"}, h.results.get())
	require.Len(t, h.logs.find(t, "ERROR", "notification dropped: 3 attempts failed"), 1)
	h.quiet(time.Hour)
	require.Len(t, og.getCalls(), 3)
}

func TestUnknownNotifierIsDead(t *testing.T) {
	slack := newNotifier("slack")
	h := newHarness(t, nil, nil, Options{}, slack)
	h.store.add(msg("g1", "webhook-old", "inc-a", notify.EventOpen, t0), msg("s1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	g := h.store.get("g1")
	require.True(t, g.Dead)
	require.Zero(t, g.Attempts-1, "recorded as one failed attempt")
	require.Equal(t, `notifier "webhook-old" is not configured (removed from the config?)`, g.LastError)
	require.False(t, h.store.get("s1").DeliveredAt.IsZero())
	require.ElementsMatch(t, []string{"webhook-old:failed", "slack:delivered"}, h.results.get())
	require.Len(t, h.logs.find(t, "ERROR", "notification dropped"), 1)
	require.Equal(t, map[string]int{"slack": 0}, h.results.lastPending())
}

func TestUndecodablePayloadIsDead(t *testing.T) {
	slack := newNotifier("slack")
	h := newHarness(t, nil, nil, Options{}, slack)
	bad := msg("a1", "slack", "inc-a", notify.EventOpen, t0)
	bad.Payload = []byte(`{"ID": 42`)
	h.store.add(bad)
	h.start()
	h.settle()
	require.True(t, h.store.get("a1").Dead)
	require.Contains(t, h.store.get("a1").LastError, "decode payload: ")
	require.Empty(t, slack.getCalls())
}

func TestErrorsAreCapped(t *testing.T) {
	slack := newNotifier("slack")
	long := strings.Repeat("é", 400) // 800 bytes
	slack.setFn(failing(1, func() error { return notify.Retryable(errors.New(long), 0) }))
	h := newHarness(t, nil, nil, Options{}, slack)
	h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
	h.start()
	h.settle()
	got := h.store.get("a1").LastError
	require.LessOrEqual(t, len(got), MaxErrorLen)
	require.True(t, utf8.ValidString(got))
	require.True(t, strings.HasSuffix(got, "..."))
	require.Equal(t, got, h.logs.find(t, "WARN", "notification failed")[0]["err"])
}

func TestCapError(t *testing.T) {
	require.Equal(t, "short", capError("short"))
	exact := strings.Repeat("x", MaxErrorLen)
	require.Equal(t, exact, capError(exact))
	got := capError(exact + "y")
	require.Len(t, got, MaxErrorLen)
	require.Equal(t, strings.Repeat("x", MaxErrorLen-3)+"...", got)
	got = capError(strings.Repeat("日", 300))
	require.True(t, utf8.ValidString(got))
	require.LessOrEqual(t, len(got), MaxErrorLen)
}

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
	t.Run("mark delivered: delivered again later (at least once)", func(t *testing.T) {
		slack := newNotifier("slack")
		h := newHarness(t, nil, nil, Options{}, slack)
		h.store.setFail("MarkDelivered", errors.New("disk full"))
		h.store.add(msg("a1", "slack", "inc-a", notify.EventOpen, t0))
		h.start()
		h.settle()
		require.Len(t, h.logs.find(t, "ERROR", "delivered, but cannot record it"), 1)
		h.store.setFail("MarkDelivered", nil)
		h.advance(storeRetry)
		require.Equal(t, []string{"a1", "a1"}, slack.callIDs())
		require.False(t, h.store.get("a1").DeliveredAt.IsZero())
	})
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
