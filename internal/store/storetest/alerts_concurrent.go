package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// testAlertConcurrent runs producers finishing runs of one workspace, each
// decide counting observations of one incident and enqueueing a message per
// notifier, against one deliverer per notifier and readers. Every message
// must be delivered once, in order.
func testAlertConcurrent(t *testing.T, s AlertStore) {
	ctx := t.Context()
	const (
		producers = 4
		perWorker = 6
		total     = producers * perWorker
		key       = "dw-drift-shared"
	)
	notifiers := []string{"n1", "n2"}
	now := minutes(1_000_000)
	decide := func(_, after store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		in := incident(key, after.Workspace, "drift", t0)
		in.Observations = 0
		for _, cur := range incidents {
			if cur.Key == key {
				in = cur
			}
		}
		in.Observations++
		var msgs []store.OutboxMessage
		for _, n := range notifiers {
			id := fmt.Sprintf("obs-%03d/%s", in.Observations, n)
			m := msg(id, n, key, t0)
			m.Payload = []byte(strconv.Itoa(in.Observations))
			msgs = append(msgs, m)
		}
		return []store.Incident{in}, msgs
	}

	var (
		producing, delivering, reading sync.WaitGroup
		mu                             sync.Mutex
		errs                           []error
		failed                         atomic.Bool
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		failed.Store(true)
	}
	for p := range producers {
		producing.Go(func() {
			for i := range perWorker {
				r := newRun(fmt.Sprintf("p%d-%02d", p, i), "shared", minutes(i))
				if err := s.StartRun(ctx, r); err != nil {
					fail(err)
					return
				}
				if _, _, err := s.FinishRunWithOutcome(ctx, outcome(r, drift.StatusDrift, minutes(i+1), fDrift), decide); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	// One deliverer per notifier, as the outbox runs them; each stops once
	// it has delivered everything, or at the first failure anywhere.
	delivered := make([][]int, len(notifiers))
	for ni, n := range notifiers {
		delivering.Go(func() {
			deadline := time.Now().Add(2 * time.Minute)
			for len(delivered[ni]) < total && !failed.Load() {
				if time.Now().After(deadline) {
					fail(fmt.Errorf("%s: delivered %d of %d in time", n, len(delivered[ni]), total))
					return
				}
				msgs, err := s.DueMessages(ctx, now, 0)
				if err != nil {
					fail(err)
					return
				}
				mine := 0
				for _, m := range msgs {
					if m.Notifier != n {
						continue
					}
					mine++
					obs, err := strconv.Atoi(string(m.Payload))
					if err != nil {
						fail(err)
						return
					}
					delivered[ni] = append(delivered[ni], obs)
					if err := s.MarkDelivered(ctx, m.ID, now, m.Payload); err != nil {
						fail(err)
						return
					}
				}
				if mine == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	stop := make(chan struct{})
	reading.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Incidents(ctx, ""); err != nil {
				fail(err)
				return
			}
			if _, err := s.OutboxStats(ctx); err != nil {
				fail(err)
				return
			}
			if _, err := s.NotifierState(ctx, "n1", key); err != nil {
				fail(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	producing.Wait()
	delivering.Wait()
	close(stop)
	reading.Wait()
	require.NoError(t, errors.Join(errs...))

	want := make([]int, total)
	for i := range want {
		want[i] = i + 1
	}
	for ni, n := range notifiers {
		require.Equal(t, want, delivered[ni], "%s: every message once, in order", n)
		st, err := s.NotifierState(ctx, n, key)
		require.NoError(t, err)
		require.True(t, bytes.Equal([]byte(strconv.Itoa(total)), st), "%s: state of the last delivery, got %q", n, st)
	}
	incs, err := s.Incidents(ctx, "shared")
	require.NoError(t, err)
	require.Len(t, incs, 1)
	require.Equal(t, total, incs[0].Observations, "a decide's read-modify-write was lost")
	stats, err := s.OutboxStats(ctx)
	require.NoError(t, err)
	for _, n := range notifiers {
		equal(t, store.OutboxCounts{}, stats[n])
	}
	runs, err := s.Runs(ctx, "shared", 0)
	require.NoError(t, err)
	require.Len(t, runs, total)
}
