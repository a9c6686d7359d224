// Package pagerduty delivers incidents to a PagerDuty service through the
// Events API v2, with plain net/http (no SDK). It owns its Config, a pure
// event builder (buildEvent and encode: table tested, exact JSON) and a
// thin send. It must not import config, store, or any other notify
// vendor package; only the notifiers factory constructs it.
//
// # Mapping
//
// One incident is one PagerDuty alert, keyed by dedup_key =
// Incident.Key, so a resend (outbox retry, crash replay) lands on the
// same alert. Every message is one POST {url}/v2/enqueue:
//
//   - open, update, renotify, remediation: event_action "trigger". A
//     trigger whose dedup_key matches an open alert is de-duplicated by
//     PagerDuty: the event is added to that alert's log (on-call sees each
//     update in its timeline) and pages no one again. A trigger after the
//     alert was resolved (in driftwatch or by hand in PagerDuty) opens a
//     new alert, so drift that is still there pages again.
//   - resolve: event_action "resolve" with the dedup_key alone. PagerDuty
//     drops a resolve without an open alert, so a resent one is harmless.
//
// driftwatch never acknowledges: that is the on-call engineer's act.
//
// A trigger's payload: summary (the incident's one line plus what this
// event reports, e.g. "(findings changed)", "(remediation failed)",
// within 1024 characters), source (the workspace, or Config.Source; then
// the workspace is the component), severity (the incident's severity
// through the severity map: critical→critical, high→error,
// moderate→warning, low→warning, info→info by default; an unmapped one is
// error), timestamp (the message's time), group (the workspace's owner),
// class (drift, forbidden or errored), and custom_details: the incident
// (key, workspace, class, driftwatch severity, escalation, since, run,
// owner, team, labels, status page), its counts, its top 20 findings
// (kind, action, address, attribute paths: never values) with the rest
// counted, an update's delta and a remediation's outcome. links holds the
// workspace's status page and a remediation's apply run when
// server.external_url is set; client is "driftwatch" and client_url the
// status page. An event stays within PagerDuty's 512 KB: past it the
// finding lists are dropped and counted.
//
// A failed remediation raises the incident's severity, and its trigger
// carries the raised severity. A de-duplicated trigger goes to the open
// alert's log; PagerDuty does not document that it changes the alert's
// title or severity, so count on the log and custom_details for the
// change (the OpsGenie notifier raises the priority instead).
//
// # Responses
//
// 2xx (PagerDuty answers 202 {"status":"success","message":"Event
// processed","dedup_key":...}) is delivered. 400 {"status":"invalid
// event","message":...,"errors":[...]} and any other 4xx are permanent:
// the error carries the message and reasons (redacted, bounded), which is
// what the notifier's status shows. 408, 429 and 5xx are retried by the
// outbox, after Retry-After when sent (PagerDuty's rate limit is about
// 120 events a minute per integration key), as are network errors and
// timeouts. Redirects are never followed: the routing key is in the body.
// Notify makes one attempt; the outbox owns retrying and backoff.
//
// Delivery is at least once: a retried trigger is de-duplicated into the
// same alert (one more log entry), a retried resolve is dropped.
//
// # Secrets
//
// The routing key (the integration key, 32 characters) is read from a
// file, sent only as the body's routing_key, over https (http only to a
// loopback address), and replaced by "[REDACTED]" in every error and log
// line, including a server's message that echoes it.
package pagerduty
