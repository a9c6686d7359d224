// Package slack delivers driftwatch incident messages to Slack, either as a
// bot (one parent message per incident, updated in place with chat.update,
// changes and remediations as thread replies; a failed remediation also
// updates the parent) or through an incoming webhook (one message per
// transition, no state).
//
// It owns its Config (secrets only from files), the pure Block Kit builders
// (buildBlocks, buildThreadBlocks, buildWebhookBlocks, which keep every
// message inside Slack's size limits), and the thin I/O around slack-go.
// Errors are classified for the outbox: rate limits, 5xx, network errors
// and timeouts are notify.Retryable; Slack's permanent error codes are not.
// No error or log line ever carries the bot token or the webhook URL.
//
// With Config.Interactive, an awaiting-approval remediation message also
// carries Approve / Reject buttons (ActionsBlockID, ActionApprove,
// ActionReject, the ActionValue naming the notifier and the remediation);
// this package only draws them. The daemon answers them elsewhere
// (internal/notify/slackinteract), which imports this package for those names.
//
// Delivery is idempotent across retries: a bot parent message carries Slack
// message metadata naming the notify.Message ID that created it, and is
// looked up with conversations.history before a parent is posted; a thread
// reply is recorded as pending in the notifier state before it is posted
// and looked up with conversations.replies only when a retry finds it
// pending.
//
// It must not import internal/config, internal/store or any other notifier
// package; the config package embeds Config, not the reverse.
package slack
