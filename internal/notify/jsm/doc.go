// Package jsm delivers incidents to Jira Service Management (JSM)
// alerts, OpsGenie's successor, through the integration API of a JSM
// "API" integration, with plain net/http (no SDK). It owns its Config, a
// pure request builder (buildRequests and the body builders: table
// tested, exact JSON) that encodes the alert body of package genie
// (shared with package opsgenie), and a thin send. It must not import
// config, store, or any other notify vendor package (opsgenie included);
// only the notifiers factory constructs it.
//
// # Wire protocol
//
// Every request is a POST under the base URL (DefaultURL,
// https://api.atlassian.com/jsm/ops/integration, or Config.APIURL) with
// "Authorization: GenieKey <integration API key>" and a JSON body:
//
//	POST {base}/v2/alerts                                   create alert
//	POST {base}/v2/alerts/{alias}/notes?identifierType=alias add note
//	POST {base}/v2/alerts/{alias}/close?identifierType=alias close alert
//
// JSM's reference ("Integration events": create, acknowledge, close and
// add note, authenticated with the integration's API key, not an
// Atlassian API token) documents the create body as message (required),
// alias, description, responders, visibleTo, actions, tags, details,
// entity and source; the actions take note, source and user. Requests are
// processed asynchronously: an accepted one is answered 202
// {"result":"Request will be processed","took":...,"requestId":...},
// and that answer is the delivery. The request status is not polled (as
// the OpsGenie notifier polls a create's): the reference documents it
// under the REST API (/jsm/ops/api/{cloudId}, with an Atlassian API
// token), not for an integration's key, so a create JSM accepts and then
// fails to process (say, a team name it does not know) is not reported
// here. The contract has no priority action, unlike OpsGenie's.
//
// # Mapping
//
// The same as the OpsGenie notifier's, as both build the alert from
// package genie, so a team moves from OpsGenie to JSM by changing the
// notifier's block (a test sends one incident sequence through both and
// compares the bodies). One incident is one alert, keyed by alias =
// Incident.Key:
//
//   - open: create (message: the incident's title within 130
//     characters; description: the incident and its findings with
//     addresses, actions and attribute paths only; priority P1..P5 from
//     the severity, critical..info; tags driftwatch, class, workspace and
//     labels as k:v; details; entity = workspace; source = "driftwatch";
//     the route's team as a responder by name, which must name a JSM
//     team). priority is OpsGenie's create field: JSM's reference does not
//     list it for this endpoint; it is sent as OpsGenie's is.
//   - renotify: the same create, which JSM de-duplicates into the open
//     alert (its count goes up; it pages again only if the team's rules
//     page on de-duplication), then a note "Still open since ...".
//     OpsGenie takes that note in the create body; JSM's create does not
//     list note, so it is a note request.
//   - update: a note with the delta (added, removed, changed findings).
//   - remediation: a note saying what became of the remediation. A failed
//     apply raises the incident's severity; OpsGenie's alert gets the
//     raised priority, JSM's cannot (no priority action), so the note says
//     "Severity raised to critical (P1); the open alert keeps its
//     priority." An alert created later for the incident carries it.
//   - resolve: close by alias with a note.
//
// Notify keeps no state of its own: the state it is given is returned
// unchanged, and nil after a resolve.
//
// # Responses
//
// 2xx is delivered. 408, 429 and 5xx are retried by the outbox, after
// Retry-After when sent, as are network errors and timeouts. 400, 401,
// 403, 404, 422 and any other 4xx are permanent: the error carries the
// service's message and a 422's field errors (redacted, bounded), which
// is what the notifier's status shows. Redirects are never followed.
// Notify makes one attempt per request; the outbox owns retrying.
//
// # Crash replay and resends
//
// A message is resent when its delivery was not recorded (an outbox
// retry, or a crash between JSM accepting a request and the outbox
// recording it). What the resend does, per event:
//
//   - open: a second create with the same alias is de-duplicated into the
//     open alert (count 2): no duplicate alert. If the alert was closed in
//     JSM meanwhile, a new one opens, as the drift is still there.
//   - renotify: the create is de-duplicated; the note appears twice.
//   - update, remediation: the note appears twice (notes are not
//     idempotent, and JSM offers no key to make them so).
//   - resolve: closing a closed alert is accepted and fails harmlessly
//     when processed ("Alert does not exist" among open alerts).
//
// A message with two requests (renotify) that fails on the second is
// resent whole: the create again (de-duplicated), then the note. Delivery
// is at least once.
//
// # Secrets
//
// The API key is read from a file, sent only in the Authorization
// header, over https (http only to a loopback address), and replaced by
// "[REDACTED]" in every error and log line, including a server's message
// that echoes it.
package jsm
