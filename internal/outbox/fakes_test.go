package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/schedule/scheduletest"
	"github.com/driftwatch/driftwatch/internal/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeStore is an in-memory store.OutboxStore with the outbox semantics the
// interface documents. Methods fail with the error in fail[method], if set.
type fakeStore struct {
	mu    sync.Mutex
	msgs  []*store.OutboxMessage // insertion order
	state map[string][]byte      // notifier + "\x00" + incident key
	fail  map[string]error
	// doubles counts MarkDelivered calls on already delivered messages.
	doubles int
	calls   map[string]int
	// leadHeld, if set, answers LeadHeld (the PostgreSQL store's fence).
	leadHeld func(context.Context) error
}

var _ store.OutboxStore = (*fakeStore)(nil)

func (s *fakeStore) LeadHeld(ctx context.Context) error {
	if s.leadHeld == nil {
		return nil
	}
	return s.leadHeld(ctx)
}

func newFakeStore() *fakeStore {
	return &fakeStore{state: map[string][]byte{}, fail: map[string]error{}, calls: map[string]int{}}
}

func (s *fakeStore) add(ms ...store.OutboxMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range ms {
		s.msgs = append(s.msgs, &m)
	}
}

func (s *fakeStore) setFail(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.fail, method)
	} else {
		s.fail[method] = err
	}
}

// enter counts a call and returns the injected failure.
func (s *fakeStore) enter(method string) error {
	s.calls[method]++
	return s.fail[method]
}

func (s *fakeStore) get(id string) store.OutboxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if m.ID == id {
			return *m
		}
	}
	panic("no message " + id)
}

func (s *fakeStore) all() []store.OutboxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.OutboxMessage, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = *m
	}
	return out
}

func (s *fakeStore) DueMessages(_ context.Context, now time.Time, limit int) ([]store.OutboxMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("DueMessages"); err != nil {
		return nil, err
	}
	heads := map[string]bool{}
	var out []store.OutboxMessage
	for _, m := range s.msgs {
		if !m.DeliveredAt.IsZero() || m.Dead {
			continue
		}
		pair := m.Notifier + "\x00" + m.IncidentKey
		if heads[pair] {
			continue
		}
		heads[pair] = true
		if !m.NextAttempt.After(now) {
			out = append(out, *m)
		}
	}
	slices.SortStableFunc(out, func(a, b store.OutboxMessage) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *fakeStore) find(id string) (*store.OutboxMessage, error) {
	for _, m := range s.msgs {
		if m.ID == id {
			return m, nil
		}
	}
	return nil, fmt.Errorf("message %s: %w", id, store.ErrNotFound)
}

func (s *fakeStore) MarkDelivered(_ context.Context, id string, at time.Time, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("MarkDelivered"); err != nil {
		return err
	}
	m, err := s.find(id)
	if err != nil {
		return err
	}
	if !m.DeliveredAt.IsZero() {
		s.doubles++
		return fmt.Errorf("message %s delivered twice", id)
	}
	m.DeliveredAt = at
	s.state[m.Notifier+"\x00"+m.IncidentKey] = bytes.Clone(state)
	return nil
}

func (s *fakeStore) MarkFailed(_ context.Context, id, lastError string, next time.Time, dead bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("MarkFailed"); err != nil {
		return err
	}
	m, err := s.find(id)
	if err != nil {
		return err
	}
	if !m.DeliveredAt.IsZero() {
		return fmt.Errorf("message %s failed after delivery", id)
	}
	m.Attempts++
	m.LastError = lastError
	m.NextAttempt = next
	m.Dead = dead
	return nil
}

func (s *fakeStore) NotifierState(_ context.Context, notifier, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("NotifierState"); err != nil {
		return nil, err
	}
	return bytes.Clone(s.state[notifier+"\x00"+key]), nil
}

func (s *fakeStore) SaveNotifierState(_ context.Context, notifier, key string, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("SaveNotifierState"); err != nil {
		return err
	}
	s.state[notifier+"\x00"+key] = bytes.Clone(state)
	return nil
}

func (s *fakeStore) notifierState(notifier, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.state[notifier+"\x00"+key])
}

func (s *fakeStore) OutboxStats(context.Context) (map[string]store.OutboxCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("OutboxStats"); err != nil {
		return nil, err
	}
	out := map[string]store.OutboxCounts{}
	for _, m := range s.msgs {
		c := out[m.Notifier]
		switch {
		case m.Dead:
			c.Dead++
		case m.DeliveredAt.IsZero():
			c.Pending++
		}
		out[m.Notifier] = c
	}
	return out, nil
}

// msg is an outbox row for notifier about incident key, created at created,
// due at once; its payload's ID is id too.
func msg(id, notifier, key string, ev notify.Event, created time.Time) store.OutboxMessage {
	payload, err := json.Marshal(notify.Message{
		ID: id, Event: ev, At: created,
		Incident: notify.Incident{Key: key, Workspace: "net", Class: notify.ClassDrift, Severity: notify.SeverityModerate},
	})
	if err != nil {
		panic(err)
	}
	return store.OutboxMessage{ID: id, Notifier: notifier, IncidentKey: key, Payload: payload, CreatedAt: created, NextAttempt: created}
}

// call is one Notify call as a fakeNotifier saw it.
type call struct {
	ID    string
	Event notify.Event
	State string
}

// fakeNotifier records calls and answers with fn (default: success, new
// state = old state + "|" + message ID).
type fakeNotifier struct {
	name    string
	fn      func(ctx context.Context, m notify.Message, state []byte, save func([]byte) error) ([]byte, error)
	entered chan string // if set, gets each message ID as Notify starts

	mu        sync.Mutex
	calls     []call
	delivered map[string]int // successful calls per message ID
	order     []string       // successful calls, in order
}

func newNotifier(name string) *fakeNotifier {
	return &fakeNotifier{name: name, delivered: map[string]int{}}
}

func (n *fakeNotifier) Name() string { return n.name }

func (n *fakeNotifier) Notify(ctx context.Context, m notify.Message, state []byte, save func([]byte) error) ([]byte, error) {
	n.mu.Lock()
	n.calls = append(n.calls, call{ID: m.ID, Event: m.Event, State: string(state)})
	fn := n.fn
	n.mu.Unlock()
	if n.entered != nil {
		n.entered <- m.ID
	}
	var out []byte
	var err error
	if fn != nil {
		out, err = fn(ctx, m, state, save)
	} else {
		out = []byte(string(state) + "|" + m.ID)
	}
	if err == nil {
		n.mu.Lock()
		n.delivered[m.ID]++
		n.order = append(n.order, m.ID)
		n.mu.Unlock()
	}
	return out, err
}

func (n *fakeNotifier) setFn(fn func(ctx context.Context, m notify.Message, state []byte, save func([]byte) error) ([]byte, error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fn = fn
}

func (n *fakeNotifier) callIDs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []string{}
	for _, c := range n.calls {
		out = append(out, c.ID)
	}
	return out
}

func (n *fakeNotifier) getCalls() []call {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

// failing returns a notifier func that fails the first n calls for each
// message ID with err(), then succeeds like the default.
func failing(n int, err func() error) func(context.Context, notify.Message, []byte, func([]byte) error) ([]byte, error) {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(_ context.Context, m notify.Message, state []byte, _ func([]byte) error) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID]++
		if seen[m.ID] <= n {
			return nil, err()
		}
		return []byte(string(state) + "|" + m.ID), nil
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// records returns the JSON log records.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.b.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r)
	}
	return out
}

// find returns the log records with this message and level.
func (b *syncBuffer) find(t *testing.T, level, msgPrefix string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range b.records(t) {
		if r["level"] == level && strings.HasPrefix(r["msg"].(string), msgPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// results records OnResult and OnPending calls.
type results struct {
	mu      sync.Mutex
	list    []string // "notifier:result"
	pending map[string]int
}

func (r *results) onResult(notifier, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, notifier+":"+result)
}

func (r *results) onPending(p map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = p
}

func (r *results) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

func (r *results) lastPending() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending
}

// harness runs a Dispatcher on a fake clock and store.
type harness struct {
	t       *testing.T
	clock   *scheduletest.FakeClock
	store   *fakeStore
	logs    *syncBuffer
	results *results
	d       *Dispatcher

	idleEpoch atomic.Int64
	idleSig   chan struct{}
	cancel    context.CancelFunc
	done      chan error
}

// newHarness builds a dispatcher over st (a fresh store if nil) with the
// given notifiers; o's Store, Notifiers, Logger, Clock and hooks are filled
// in. Backoff defaults to a fixed minute, so tests can count.
func newHarness(t *testing.T, st *fakeStore, clock *scheduletest.FakeClock, o Options, ns ...*fakeNotifier) *harness {
	t.Helper()
	if st == nil {
		st = newFakeStore()
	}
	if clock == nil {
		clock = scheduletest.NewFakeClock(t0)
	}
	h := &harness{t: t, clock: clock, store: st, logs: &syncBuffer{}, results: &results{}, idleSig: make(chan struct{}, 1)}
	h.idleEpoch.Store(-1)
	o.Store = st
	o.Clock = clock
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.OnResult = h.results.onResult
	o.OnPending = h.results.onPending
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return time.Minute }
	}
	if o.Notifiers == nil {
		o.Notifiers = map[string]notify.Notifier{}
		for _, n := range ns {
			o.Notifiers[n.name] = n
		}
	}
	d, err := New(o)
	require.NoError(t, err)
	d.testIdle = func(epoch int64) {
		h.idleEpoch.Store(epoch)
		select {
		case h.idleSig <- struct{}{}:
		default:
		}
	}
	h.d = d
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(h.t.Context())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.d.Run(ctx) }()
	h.t.Cleanup(func() {
		if h.cancel != nil {
			h.stop()
		}
	})
}

// stop cancels Run and waits for it to return nil.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		require.NoError(h.t, err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return after cancel")
	}
}

// waitIdle waits until the loop has made a pass that started after the
// current epoch began and gone to sleep with nothing in flight.
func (h *harness) waitIdle(epoch int64) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for h.idleEpoch.Load() < epoch {
		select {
		case <-h.idleSig:
		case <-deadline:
			h.t.Fatalf("dispatcher not idle at epoch %d (last idle epoch %d)", epoch, h.idleEpoch.Load())
		}
	}
}

// settle wakes the loop and waits until it is idle.
func (h *harness) settle() {
	h.t.Helper()
	epoch := h.d.testEpoch.Add(1)
	h.d.Wake()
	h.waitIdle(epoch)
}

// advance moves the fake clock and waits for the loop, which must wake up
// by itself (its timer), to go idle again.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	epoch := h.d.testEpoch.Add(1)
	h.clock.Advance(d)
	h.waitIdle(epoch)
}

// quiet moves the fake clock by less than the loop's next wake-up and
// checks, with a forced pass, that nothing was due.
func (h *harness) quiet(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.settle()
}
