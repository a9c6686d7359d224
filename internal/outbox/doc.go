// Package outbox delivers the notifications the pipeline persisted in the
// store's outbox (store.OutboxStore) to the configured notifiers, and keeps
// retrying until each is delivered or given up on.
//
// A Dispatcher reads due messages, decodes each payload (the JSON of a
// notify.Message, as incident.Enqueue writes it), and calls the notifier
// with the state it saved for the incident (a Slack parent message ts, say)
// and a saveState that stores new state at once. Outcomes:
//
//   - success: MarkDelivered with the notifier's new state, atomically;
//   - a notify.RetryableError, or an attempt that ran past AttemptTimeout:
//     MarkFailed with the next attempt at now + max(Retry-After, Backoff);
//     a Retry-After also pauses the whole notifier until then (a 429 is
//     about the API, not the message);
//   - any other error, a payload that does not decode, a notifier no
//     longer configured, or MaxAttempts reached: MarkFailed dead, logged at
//     error level. A dead message stays for inspection and no longer holds
//     up its incident's later messages.
//
// # Ordering and independence
//
// The store returns only the oldest undelivered message of each (notifier,
// incident) pair, so an incident's messages reach a notifier in order (an
// update never overtakes its open). Each notifier has its own worker
// goroutine that delivers its messages one at a time; a notifier that hangs
// or fails holds up only itself. Within a notifier, messages that have
// never been tried go before retries, so a message that keeps failing does
// not delay fresh ones.
//
// # Delivery guarantees
//
// Delivery is at least once: a crash between a notifier's side effect and
// MarkDelivered sends that message again after the restart, so notifiers
// use notify.Message.ID to make delivery idempotent where the vendor allows.
// Within one process a message is never handed to a notifier again once
// delivered: when MarkDelivered fails (a full disk, a read-only file
// system), the delivery is kept in memory and recorded at the message's
// next turn instead of sending it again. Store writes after an attempt run on a context detached from
// Run's, so a shutdown that lands mid-delivery still records the outcome;
// an attempt cut short by the shutdown itself is not counted as a failure
// and is retried at the next start, or by the next leader: only the leader
// runs a Dispatcher, and a leader's crash mid-send hands its message to
// the next one (docs/architecture/store.md, "The outbox across leaders").
//
// # Waking up
//
// Run sleeps until the earliest retry it scheduled, a Wake (call it after
// enqueueing), or PollInterval, whichever comes first; the poll picks up
// messages it cannot know about, such as retries scheduled by a previous
// process. Time comes from an injected schedule.Clock, so tests drive it
// with scheduletest.FakeClock.
//
// Error strings stored and logged come from the notifier, which redacts its
// own secrets; the dispatcher additionally caps them at MaxErrorLen bytes.
// This package must not import config, app or any notifier implementation.
package outbox
