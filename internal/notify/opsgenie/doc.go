// Package opsgenie delivers incidents to OpsGenie's Alert API v2 through
// github.com/opsgenie/opsgenie-go-sdk-v2. It owns its Config, a pure request
// builder (buildCreate, buildNote, buildPriority, buildClose: table tested)
// that wraps the alert body of package genie (shared with package jsm)
// into the SDK's requests, and a thin send. It must not import config,
// store, or any other notify vendor package; only app constructs it.
//
// # Mapping
//
// One incident is one OpsGenie alert, keyed by alias = Incident.Key, so a
// resend (outbox retry, crash replay, renotify) lands on the same alert:
// OpsGenie de-duplicates creates whose alias matches an open alert.
//
//   - open, renotify: create alert (message, description of findings with
//     addresses, actions and attribute paths only, priority P1..P5 from the
//     severity, tags, details, entity = workspace, source = "driftwatch",
//     the route's team as responder). A renotify on an alert that is still
//     open is de-duplicated by OpsGenie: it bumps the alert's count and adds
//     the note, and pages again only if the account's notification rules
//     page on de-duplication.
//   - update: set the priority if the severity changed (idempotent, so it
//     goes first), then add a note with the delta (not idempotent, so last).
//   - remediation: as update, with a note saying what became of the
//     remediation; a failed apply carries the incident's raised severity,
//     so the priority goes up one step (PUT /v2/alerts/{alias}/priority,
//     the SDK's UpdatePriority) before the note.
//   - resolve: close by alias with a note.
//
// The per-incident state returned to the outbox is JSON
// {"priority","alert_id"}: the priority last sent, so an update knows
// whether to change it.
//
// # SDK traps and how this package handles them
//
// The SDK (v1.2.23, its last release, from 2024) has behaviour a
// pager cannot live with; each is handled here (all but the last have a
// test):
//
//   - It ignores the context for HTTP. Every SDK call runs in a goroutine
//     and Notify returns when ctx is done; the SDK's http.Client has a
//     per-attempt Timeout (RequestTimeout), and its transport re-attaches
//     the caller's context to each request, so an abandoned call is also
//     aborted on the wire instead of running on for Timeout.
//   - It retries internally (go-retryablehttp: RetryCount 0 means 4
//     attempts, 429 and 5xx retried, Retry-After honoured uncapped), all
//     inside one Notify call that the context cannot interrupt. The outbox
//     owns retrying: it persists attempts, backs off across restarts and
//     reports dead messages, and a retried AddNote is not idempotent. So a
//     RetryPolicy that never retries is installed: one HTTP attempt per SDK
//     call, and the error says whether and when the outbox should retry
//     (RetryCount is set to 1 only because 0 means "default 4").
//   - Its ApiError drops response headers, so Retry-After is read by the
//     transport, which records the response of the current call. SDK calls
//     of one Notifier are therefore serialised (OpsGenie traffic is a few
//     requests per incident change, so this costs nothing).
//   - It speaks plain http to any host that does not contain "api".
//     Config.APIURL is refused unless its host contains "api" or is a
//     loopback address (test servers, where plain http stays on the host).
//   - Without a logger it writes coloured logrus lines to stderr. It gets a
//     logrus logger that forwards to slog at debug level, with the API key
//     redacted.
//   - Create, close and add-note are asynchronous (HTTP 202 with a request
//     id). For create, the request status is polled a few times: a
//     processed failure is a permanent error, "not processed yet" after the
//     last poll counts as delivered (the 202 is delivery, and OpsGenie
//     processes it later). Close, note and priority are not polled.
//   - The SDK writes a package variable (the User-Agent) every time a
//     client is constructed, which races with requests of other clients
//     in flight. Construct notifiers before sending (at start-up, and
//     not while others send, e.g. on a config reload).
//
// Delivery is at least once: a create or close that is retried after a
// lost response is harmless (alias de-duplication, closing a closed
// alert), a retried note appears twice.
//
// The API key is read from a file, sent only in the Authorization header,
// and replaced by "[REDACTED]" in every error and log line, including a
// server's error message that echoes it.
//
// # End of support and the Jira Service Management successor
//
// Atlassian ends OpsGenie support on 2027-04-05; the REST API works until
// then. The successor, Jira Service Management's alerts through the JSM
// Ops integration API, is package jsm (notifier type jsm): its own small
// net/http client, as this SDK cannot put a path prefix into its base
// URL. Both notifiers build the alert from package genie (message,
// description, tags, details, entity, source, priority, alias rule and
// notes), so the mapping is the same by construction; they differ in the
// responders (configured extra ones are OpsGenie's only), in the priority
// (JSM's integration API has no priority action, so a failed
// remediation's note says so instead of raising it) and in the renotify
// note (a note request there, in the create body here). A team moves by
// changing its notifier block to type jsm with the key of a JSM "API"
// integration; responders by team name must then name JSM teams. The
// migration test in package notifytest sends one incident sequence
// through both and compares the bodies.
package opsgenie
