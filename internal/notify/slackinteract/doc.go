// Package slackinteract answers the Approve / Reject buttons that the
// Slack notifier (internal/notify/slack) puts on awaiting-approval
// remediation messages: it is the http.Handler behind a Slack app's
// interactivity Request URL (/api/v1/slack/interactions).
//
// It owns the request's authentication and what follows from it: the
// signature check (X-Slack-Signature, HMAC-SHA256 of the raw body keyed by
// the notifier's signing secret, compared in constant time), the 5-minute
// timestamp window, the refusal of a signature seen before within that
// window (replay), the body size limit, the payload (block_actions), the
// approver check (Slack user IDs, per notifier), the decision through an
// injected Decider (the daemon passes the same remediation control the
// API uses, with the Slack user recorded as the actor), and the reply
// through the payload's response_url, which must be on Slack's host
// (hooks.slack.com) or the origin a notifier is configured with.
//
// Every click on a driftwatch button that passes the authentication is
// told to the optional Options.OnDecision (the daemon records it in the
// audit log through DecisionAudit, as Decision.AuditEntry): who clicked, approve or reject, which remediation, and
// whether it was decided, refused (not an approver, another channel) or
// failed. Requests that fail the authentication name nobody: they are
// told to the optional Options.OnRefused with their peer and the reason
// only (the daemon records them, through RefusalAudit, in the audit log
// as anonymous entries, aggregated and rate limited like the API's anonymous refusals).
//
// FromSpecs reads the Notifiers (signing secrets, approvers) from the
// notifiers' settings blocks (notifycfg.Spec); it reads no config.
// NewAudited is the daemon's Handler: FromSpecs at every request, and the
// audit hooks DecisionAudit and RefusalAudit on the recorder it is handed.
//
// The signatures seen within the window are kept in Options.Replay when
// set (the daemon's store, so that a replay is refused after a restart
// too), else in memory.
//
// Every refusal is logged at warn with its reason, never with the signing
// secret, the raw body or the response_url (a short-lived credential to
// post into the channel).
//
// It must not import internal/config, internal/app, internal/server or
// internal/remediation: the daemon hands it plain Notifier values, the
// Decider and the context function that records the actor. It imports
// internal/notify/slack only for the button names and values that package
// draws.
package slackinteract
