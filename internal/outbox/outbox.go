package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/schedule"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Defaults for zero Options fields.
const (
	DefaultAttemptTimeout = 30 * time.Second
	DefaultPollInterval   = 30 * time.Second
	DefaultBatchSize      = 1000
	// MinBackoff and MaxBackoff bound DefaultBackoff.
	MinBackoff = 5 * time.Second
	MaxBackoff = 10 * time.Minute
	// MaxRetryAfter caps a server's Retry-After, so a broken or hostile
	// value cannot silence a notifier for days.
	MaxRetryAfter = time.Hour
	// MaxErrorLen caps the error text stored with a failed attempt and logged.
	MaxErrorLen = 500
	// storeRetry is how long the dispatcher waits after a failed store call
	// before trying again (rather than spinning on a broken database).
	storeRetry = 5 * time.Second
	// storeTimeout bounds each store call after an attempt.
	storeTimeout = 30 * time.Second
)

// Metrics results reported to Options.OnResult; they match the metrics
// package's NotificationDelivered, NotificationRetry and NotificationFailed.
const (
	ResultDelivered = "delivered"
	ResultRetry     = "retry"
	ResultFailed    = "failed"
)

// Options configures a Dispatcher.
type Options struct {
	// Store holds the outbox. Required.
	Store store.OutboxStore
	// Notifiers by configured name. A message for a name not in the map is
	// dead: its notifier was removed from the config.
	Notifiers map[string]notify.Notifier
	// Logger is required.
	Logger *slog.Logger
	// Clock is the source of time and timers (default schedule.RealClock).
	Clock schedule.Clock
	// Backoff returns how long to wait after the attempt-th failed attempt
	// (1 for the first). Default DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// MaxAttempts gives up on a message after this many failed attempts;
	// 0 retries retryable errors forever.
	MaxAttempts int
	// AttemptTimeout bounds each Notify call (default 30s).
	AttemptTimeout time.Duration
	// PollInterval is the longest the dispatcher sleeps without looking at
	// the store (default 30s).
	PollInterval time.Duration
	// BatchSize is how many due messages one store read returns (default
	// 1000).
	BatchSize int
	// Fence, if set, is called before each attempt: a replica sharing the
	// store with others checks that it still leads. An error postpones
	// the notifier's deliveries, without counting an attempt, as a failed
	// read of the notifier's state does. Unset, a Store that has a
	// LeadHeld method (the PostgreSQL store's) is its fence.
	Fence func(context.Context) error
	// OnResult, if set, is called after every attempt with the notifier's
	// name and ResultDelivered, ResultRetry or ResultFailed (metrics).
	OnResult func(notifier, result string)
	// OnPending, if set, is called after every pass with the number of
	// undelivered messages per notifier, every configured notifier included
	// (metrics).
	OnPending func(map[string]int)
}

// Dispatcher delivers outbox messages. Create it with New and run it with
// Run; Wake and SetNotifiers are safe to call from any goroutine.
type Dispatcher struct {
	store       store.OutboxStore
	logger      *slog.Logger
	clock       schedule.Clock
	backoff     func(int) time.Duration
	maxAttempts int
	timeout     time.Duration
	poll        time.Duration
	batch       int
	fence       func(context.Context) error
	onResult    func(string, string)
	onPending   func(map[string]int)

	wake    chan struct{}
	running atomic.Bool

	mu        sync.Mutex
	notifiers map[string]notify.Notifier
	// retries are the next-attempt times this process scheduled, so Run
	// wakes for them; paused holds notifiers told to slow down (Retry-After)
	// or whose store calls failed, until when.
	retries []time.Time
	paused  map[string]time.Time
	// unrecorded holds messages the notifier accepted whose MarkDelivered
	// failed (a full disk): their next turn records the delivery instead
	// of sending them again.
	unrecorded map[string]delivery

	// Test hooks: testEpoch is read at the start of each pass and handed to
	// testIdle when the loop goes to sleep with no delivery in flight and no
	// wake pending.
	testEpoch atomic.Int64
	testIdle  func(epoch int64)
}

// New returns a Dispatcher. It checks the options; it does not touch the
// store.
func New(o Options) (*Dispatcher, error) {
	var errs []error
	if o.Store == nil {
		errs = append(errs, errors.New("outbox: Options.Store is required"))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("outbox: Options.Logger is required"))
	}
	for name, n := range o.Notifiers {
		if n == nil {
			errs = append(errs, fmt.Errorf("outbox: notifier %q is nil", name))
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxAttempts", int64(o.MaxAttempts)}, {"AttemptTimeout", int64(o.AttemptTimeout)},
		{"PollInterval", int64(o.PollInterval)}, {"BatchSize", int64(o.BatchSize)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("outbox: Options.%s must not be negative", f.name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if l, ok := o.Store.(interface{ LeadHeld(context.Context) error }); ok && o.Fence == nil {
		o.Fence = l.LeadHeld
	}
	d := &Dispatcher{
		store:       o.Store,
		logger:      o.Logger,
		clock:       o.Clock,
		backoff:     o.Backoff,
		maxAttempts: o.MaxAttempts,
		timeout:     o.AttemptTimeout,
		poll:        o.PollInterval,
		batch:       o.BatchSize,
		fence:       o.Fence,
		onResult:    o.OnResult,
		onPending:   o.OnPending,
		wake:        make(chan struct{}, 1),
		notifiers:   maps.Clone(o.Notifiers),
		paused:      map[string]time.Time{},
		unrecorded:  map[string]delivery{},
	}
	if d.clock == nil {
		d.clock = schedule.RealClock{}
	}
	if d.backoff == nil {
		d.backoff = DefaultBackoff
	}
	if d.timeout == 0 {
		d.timeout = DefaultAttemptTimeout
	}
	if d.poll == 0 {
		d.poll = DefaultPollInterval
	}
	if d.batch == 0 {
		d.batch = DefaultBatchSize
	}
	if d.onResult == nil {
		d.onResult = func(string, string) {}
	}
	if d.notifiers == nil {
		d.notifiers = map[string]notify.Notifier{}
	}
	return d, nil
}

// DefaultBackoff doubles from MinBackoff (first retry) up to MaxBackoff,
// adding up to 25% random jitter so that messages that failed together
// (one outage) do not all come back at once; it never exceeds MaxBackoff.
func DefaultBackoff(attempt int) time.Duration {
	d := MinBackoff
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	d += time.Duration(rand.Int64N(int64(d)/4 + 1))
	return min(d, MaxBackoff)
}

// Wake makes Run look for due messages now; call it after enqueueing.
// It never blocks.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// SetNotifiers replaces the notifiers (after a config reload). Deliveries
// in flight finish with the notifier they started with; messages for names
// no longer present become dead at their next attempt.
func (d *Dispatcher) SetNotifiers(n map[string]notify.Notifier) {
	d.mu.Lock()
	d.notifiers = maps.Clone(n)
	if d.notifiers == nil {
		d.notifiers = map[string]notify.Notifier{}
	}
	d.mu.Unlock()
	d.Wake()
}

// Run delivers due messages until ctx is done, then waits for deliveries in
// flight (which see ctx's cancellation) and returns nil. Only one Run may
// be active at a time.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("outbox: dispatcher is already running")
	}
	defer d.running.Store(false)

	var wg sync.WaitGroup
	defer wg.Wait()
	done := make(chan string)
	busy := map[string]bool{} // notifiers with a worker delivering
	for {
		epoch := d.testEpoch.Load()
		now := d.clock.Now()
		wakeAt := now.Add(d.poll)
		if retryAt, ok := d.pass(ctx, now, busy, &wg, done); ok && retryAt.Before(wakeAt) {
			wakeAt = retryAt
		}
		d.reportPending(ctx)
		if next, ok := d.nextScheduled(now); ok && next.Before(wakeAt) {
			wakeAt = next
		}
		if d.testIdle != nil && len(busy) == 0 && len(d.wake) == 0 {
			d.testIdle(epoch)
		}
		timer := d.clock.NewTimerAt(wakeAt)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-d.wake:
		case name := <-done:
			delete(busy, name)
		case <-timer.C():
		}
		timer.Stop()
	}
}

// pass reads the due messages and starts a worker for every notifier that
// has some and is neither busy nor paused. It returns when to try again if
// the store read failed.
func (d *Dispatcher) pass(ctx context.Context, now time.Time, busy map[string]bool, wg *sync.WaitGroup, done chan<- string) (time.Time, bool) {
	msgs, err := d.store.DueMessages(ctx, now, d.batch)
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Error("cannot read the outbox", "err", capError(err.Error()))
		}
		return now.Add(storeRetry), true
	}
	d.mu.Lock()
	notifiers := d.notifiers
	paused := maps.Clone(d.paused)
	d.mu.Unlock()

	groups := map[string][]store.OutboxMessage{}
	var order []string
	for _, m := range msgs {
		if busy[m.Notifier] || paused[m.Notifier].After(now) {
			continue
		}
		if _, ok := groups[m.Notifier]; !ok {
			order = append(order, m.Notifier)
		}
		groups[m.Notifier] = append(groups[m.Notifier], m)
	}
	for _, name := range order {
		n, ok := notifiers[name]
		if !ok {
			for _, m := range groups[name] {
				d.dead(ctx, m, fmt.Sprintf("notifier %q is not configured (removed from the config?)", name))
			}
			continue
		}
		busy[name] = true
		wg.Add(1)
		go func(batch []store.OutboxMessage) {
			defer wg.Done()
			d.work(ctx, n, batch)
			select {
			case done <- name:
			case <-ctx.Done():
			}
		}(groups[name])
	}
	return time.Time{}, false
}

// work delivers one notifier's batch, one message at a time: messages never
// tried first, then by age. It stops early when the notifier is paused.
func (d *Dispatcher) work(ctx context.Context, n notify.Notifier, batch []store.OutboxMessage) {
	slices.SortStableFunc(batch, func(a, b store.OutboxMessage) int {
		return min(a.Attempts, 1) - min(b.Attempts, 1)
	})
	for _, m := range batch {
		if ctx.Err() != nil || !d.deliver(ctx, n, m) {
			return
		}
	}
}

// deliver makes one attempt at m and records its outcome. It returns false
// if the worker should stop (shutdown, a paused notifier, a failing store).
func (d *Dispatcher) deliver(ctx context.Context, n notify.Notifier, m store.OutboxMessage) bool {
	attempt := m.Attempts + 1
	log := d.logger.With("notifier", m.Notifier, "message_id", m.ID, "incident", m.IncidentKey, "attempt", attempt)

	if dl, ok := d.takeUnrecorded(m.ID); ok {
		return d.record(ctx, log, m, dl)
	}

	var msg notify.Message
	if err := json.Unmarshal(m.Payload, &msg); err != nil {
		d.dead(ctx, m, fmt.Sprintf("decode payload: %v", err))
		return true
	}
	log = log.With("event", string(msg.Event))

	sctx, cancel := storeContext(ctx)
	state, err := d.store.NotifierState(sctx, m.Notifier, m.IncidentKey)
	cancel()
	if err != nil {
		// Delivering without the state would, say, start a second Slack
		// thread: wait for the store instead.
		log.Error("cannot read notifier state; delivery postponed", "err", capError(err.Error()))
		d.pause(m.Notifier, d.clock.Now().Add(storeRetry))
		return false
	}
	if d.fence != nil {
		// Not detached from Run's context: a replica that stops leading
		// stops waiting for its fence.
		fctx, cancel := context.WithTimeout(ctx, storeTimeout)
		err := d.fence(fctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				// Another replica may lead and send this message: sending
				// it here too could post it twice at once.
				log.Warn("not delivering: this replica may no longer lead; delivery postponed", "err", capError(err.Error()))
				d.pause(m.Notifier, d.clock.Now().Add(storeRetry))
			}
			return false
		}
	}
	var saveFailed atomic.Bool
	saveState := func(s []byte) error {
		sctx, cancel := storeContext(ctx)
		defer cancel()
		if err := d.store.SaveNotifierState(sctx, m.Notifier, m.IncidentKey, s); err != nil {
			saveFailed.Store(true)
			return fmt.Errorf("save notifier state: %w", err)
		}
		return nil
	}

	newState, timedOut, err := d.attempt(ctx, n, msg, state, saveState)
	now := d.clock.Now()
	if err == nil {
		return d.record(ctx, log, m, delivery{at: now, state: newState})
	}
	if saveFailed.Load() && !timedOut {
		// The store failed, not the notifier (which saves its state
		// before anything else can fail, so the retry finds what this
		// attempt sent): not an attempt, never a reason to give up.
		log.Error("cannot save notifier state; delivery postponed", "err", capError(err.Error()))
		d.pause(m.Notifier, now.Add(storeRetry))
		return false
	}
	if ctx.Err() != nil && !timedOut {
		// Shutting down: not the notifier's failure, and not an attempt.
		log.Info("delivery interrupted by shutdown; it will be retried", "err", capError(err.Error()))
		return false
	}

	retryable, after := notify.IsRetryable(err)
	if timedOut {
		retryable = true
		err = fmt.Errorf("attempt timed out after %s: %w", d.timeout, err)
	}
	errText := capError(err.Error())
	switch {
	case !retryable:
		d.fail(ctx, log, m, errText, "permanent error; giving up")
		return true
	case d.maxAttempts > 0 && attempt >= d.maxAttempts:
		d.fail(ctx, log, m, errText, fmt.Sprintf("%d attempts failed; giving up", attempt))
		return true
	}
	after = min(max(after, 0), MaxRetryAfter)
	next := now.Add(max(after, d.backoff(attempt)))
	sctx, cancel = storeContext(ctx)
	defer cancel()
	if err := d.store.MarkFailed(sctx, m.ID, errText, next, false); err != nil {
		log.Error("cannot record a failed attempt", "err", capError(err.Error()), "attempt_err", errText)
		d.pause(m.Notifier, now.Add(storeRetry))
		return false
	}
	d.onResult(m.Notifier, ResultRetry)
	d.scheduled(next)
	log.Warn("notification failed; will retry", "err", errText, "next_attempt", next, "retry_after", after)
	if after > 0 {
		// A Retry-After (429) is about the notifier's API, not this
		// message: hold the notifier's other messages too.
		d.pause(m.Notifier, now.Add(after))
		return false
	}
	return true
}

// delivery is a message the notifier accepted: when, and the notifier's
// new state for its incident.
type delivery struct {
	at    time.Time
	state []byte
}

// record marks m delivered. When the store cannot (a full disk, a
// read-only file system), the delivery is kept in memory and recorded at
// m's next turn, after storeRetry: this process never hands a delivered
// message to its notifier again. Only a restart before the store is back
// sends it again (at least once, see the package doc).
func (d *Dispatcher) record(ctx context.Context, log *slog.Logger, m store.OutboxMessage, dl delivery) bool {
	sctx, cancel := storeContext(ctx)
	defer cancel()
	if err := d.store.MarkDelivered(sctx, m.ID, dl.at, dl.state); err != nil {
		d.mu.Lock()
		d.unrecorded[m.ID] = dl
		d.mu.Unlock()
		log.Error("delivered, but cannot record it yet; recording is retried, the message is not sent again",
			"err", capError(err.Error()), "delivered_at", dl.at)
		d.pause(m.Notifier, d.clock.Now().Add(storeRetry))
		return false
	}
	d.onResult(m.Notifier, ResultDelivered)
	log.Info("notification delivered")
	return true
}

// takeUnrecorded returns and forgets the delivery of message id that record
// could not store.
func (d *Dispatcher) takeUnrecorded(id string) (delivery, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dl, ok := d.unrecorded[id]
	delete(d.unrecorded, id)
	return dl, ok
}

// attempt calls Notify with the attempt timeout, on the dispatcher's clock
// (so fake clocks can expire it) and as a real deadline (so the notifier's
// HTTP client sees it). A panicking notifier is a failed, retryable attempt.
func (d *Dispatcher) attempt(ctx context.Context, n notify.Notifier, m notify.Message, state []byte, save func([]byte) error) (newState []byte, timedOut bool, err error) {
	cause := fmt.Errorf("notifier %q: attempt timeout (%s) reached: %w", n.Name(), d.timeout, context.DeadlineExceeded)
	actx, cancelCause := context.WithCancelCause(ctx)
	actx, cancelTimeout := context.WithTimeoutCause(actx, d.timeout, cause)
	timer := d.clock.NewTimerAt(d.clock.Now().Add(d.timeout))
	stop := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			cancelCause(cause)
		case <-stop:
		}
	}()
	defer func() {
		close(stop)
		timer.Stop()
		timedOut = errors.Is(context.Cause(actx), cause)
		cancelTimeout()
		cancelCause(nil)
	}()
	defer func() {
		if r := recover(); r != nil {
			d.logger.Error("notifier panicked", "notifier", n.Name(), "message_id", m.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = notify.Retryable(fmt.Errorf("notifier panicked: %v", r), 0)
		}
	}()
	newState, err = n.Notify(actx, m, state, save)
	return newState, false, err
}

// fail marks m dead after a failed attempt.
func (d *Dispatcher) fail(ctx context.Context, log *slog.Logger, m store.OutboxMessage, errText, why string) {
	sctx, cancel := storeContext(ctx)
	defer cancel()
	if err := d.store.MarkFailed(sctx, m.ID, errText, time.Time{}, true); err != nil {
		log.Error("cannot record a dead message", "err", capError(err.Error()), "attempt_err", errText)
		return
	}
	d.onResult(m.Notifier, ResultFailed)
	log.Error("notification dropped: "+why, "err", errText)
}

// dead marks m dead without an attempt (undecodable, no such notifier).
func (d *Dispatcher) dead(ctx context.Context, m store.OutboxMessage, reason string) {
	reason = capError(reason)
	sctx, cancel := storeContext(ctx)
	defer cancel()
	log := d.logger.With("notifier", m.Notifier, "message_id", m.ID, "incident", m.IncidentKey)
	if err := d.store.MarkFailed(sctx, m.ID, reason, time.Time{}, true); err != nil {
		log.Error("cannot record a dead message", "err", capError(err.Error()), "reason", reason)
		return
	}
	d.onResult(m.Notifier, ResultFailed)
	log.Error("notification dropped", "err", reason)
}

func (d *Dispatcher) pause(notifier string, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if until.After(d.paused[notifier]) {
		d.paused[notifier] = until
	}
}

func (d *Dispatcher) scheduled(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retries = append(d.retries, t)
}

// nextScheduled returns the earliest retry or pause end after now, and
// forgets those that have passed.
func (d *Dispatcher) nextScheduled(now time.Time) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var next time.Time
	d.retries = slices.DeleteFunc(d.retries, func(t time.Time) bool { return !t.After(now) })
	for _, t := range d.retries {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for name, t := range d.paused {
		if !t.After(now) {
			delete(d.paused, name)
			continue
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next, !next.IsZero()
}

func (d *Dispatcher) reportPending(ctx context.Context) {
	if d.onPending == nil {
		return
	}
	stats, err := d.store.OutboxStats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("cannot count pending notifications", "err", capError(err.Error()))
		}
		return
	}
	d.mu.Lock()
	pending := make(map[string]int, len(d.notifiers))
	for name := range d.notifiers {
		pending[name] = 0
	}
	d.mu.Unlock()
	for name, c := range stats {
		if _, ok := pending[name]; ok || c.Pending > 0 {
			pending[name] = c.Pending
		}
	}
	d.onPending(pending)
}

// storeContext is for store calls that record what already happened: they
// must succeed even if ctx was cancelled meanwhile (a shutdown after a
// delivery must still mark it delivered), but not hang forever.
func storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
}

// capError cuts s to at most MaxErrorLen bytes on a rune boundary, marking
// the cut with "...".
func capError(s string) string {
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
