// Package teams delivers incidents to a Microsoft Teams channel or chat
// through a Workflows (Power Automate) flow whose trigger is "When a
// Teams webhook request is received", with plain net/http (no SDK). Office
// 365 connectors (Incoming Webhooks) are retired; their URLs are refused.
// It owns its Config, a pure card builder (buildCard and encode: table
// tested, exact JSON) and a thin send. It must not import config, store,
// or any other notify vendor package; only the notifiers factory
// constructs it.
//
// # Mapping
//
// Every message (open, update, renotify, remediation, resolve) is one POST
// of application/json to the trigger URL:
//
//	{"type": "message", "attachments": [{
//	  "contentType": "application/vnd.microsoft.card.adaptive",
//	  "contentUrl": null,
//	  "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
//	              "type": "AdaptiveCard", "version": "1.4",
//	              "msteams": {"width": "Full"}, "body": [...], "actions": [...]}}]}
//
// and the flow posts the card. A Workflows webhook cannot edit or thread
// a posted card, so each card is self-contained: a coloured head (the
// event and severity over the incident's title, notify.Title; attention
// for critical and high, warning for moderate and low, accent for info,
// good for a resolve or an applied remediation), a FactSet with the
// severity (and how far failed remediations raised it), workspace,
// class, owner, since, how long it has been open, the counts, the run and
// an errored incident's error; on an update, what changed (added,
// removed, changed findings); on a remediation, its ID, result, mode,
// resources, reason, apply run and expiry (and the approve command while
// it awaits approval); then the top findings, except on a resolve. A
// finding is its action, address and attribute paths (and where a
// forbidden type was seen, or a backend finding's detail): never a value.
// Actions: "Open in driftwatch" to Incident.URL and "Open remediation
// run" to Remediation.URL, when server.external_url makes them exist.
//
// The title and the findings (addresses, paths) go in RichTextBlock text
// runs, which Teams shows as is; fact values (workspace, owner, error,
// reason, ...) are Markdown, so their *, _, `, [, ], ~ and \ are
// backslash-escaped.
//
// # Size
//
// Teams refuses a message over about 28 KB, and the flow's "post card"
// action fails after the trigger has already answered 202, so a card
// over the limit would vanish without an error here. The encoded request
// is kept within 24 KB: at most 50 findings and 30 delta entries are
// listed, each address, path and value is bounded, and whatever does not
// fit is cut from the end of the longer list (the delta or the findings,
// so an update keeps some of each) and counted in an "…and N more" line
// that points to the status page.
//
// # Responses
//
// 202 Accepted (sometimes 200) with an empty body is delivered: the flow
// has accepted the request, which is all Workflows reports; a flow that
// then fails to post shows in its run history in Power Automate, not
// here. 400 (a payload the trigger refuses), 401 and 403 (a bad or
// revoked signature), 404 (the flow was deleted or its trigger changed)
// and any other 4xx are permanent: the error carries the service's
// error.code and error.message (redacted, bounded) and what to do, which
// is what the notifier's status shows. 408, 429 and 5xx are retried by
// the outbox, after Retry-After when sent (Workflows throttles a flow's
// trigger), as are network errors and timeouts. Redirects are never
// followed. Notify makes one attempt; the outbox owns retrying and
// backoff.
//
// # Duplicates
//
// Teams offers nothing to de-duplicate on: no idempotency key, no message
// to look up. Delivery is at least once. A message the outbox resends
// (a retry after a timeout that the flow did accept, or a crash replay:
// the flow accepted the request and driftwatch died before recording it)
// posts the same card a second time. The card is a pure function of the
// message (no clock, no random), so the channel shows an identical
// duplicate, never two cards that contradict each other. The notifier
// keeps no per-incident state: state is returned unchanged.
//
// # Secrets
//
// The trigger URL carries the flow's signature in its sig query
// parameter: whoever has it can post to the channel. It is read from a
// file, must be https (http only to a loopback address), and neither it
// nor its host, path, query or sig appears in errors or logs: they are
// replaced by "[REDACTED]", including in a server's message that echoes
// them. Configuration errors name the file, never its content.
package teams
