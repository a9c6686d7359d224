package outbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
)

func retryable(after time.Duration) func() error {
	return func() error { return notify.Retryable(errors.New("slack: 503 service unavailable"), after) }
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
		require.Len(t, h.logs.find(t, "INFO", "notification delivered"), 2)
		require.EqualValues(t, float64(2*time.Minute), h.logs.find(t, "WARN", "notification failed")[0]["retry_after"]) //nolint:testifylint // float-compare: whole nanoseconds decoded from JSON, exact in float64
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
