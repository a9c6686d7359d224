// Package github mirrors driftwatch's incidents as issues of one GitHub
// (or GitHub Enterprise Server) repository, through
// github.com/google/go-github/v75. It owns its Config, a pure builder
// (build.go: the title, description and each event's comment as
// Markdown; exact-text tests) and a thin send. It must not import config,
// store, or any other notify vendor package; only the notifiers factory
// constructs it.
//
// # Mapping
//
// One incident key (a workspace and class) is one rolling issue, for
// good: closed when the incident resolves and reopened when the same
// drift comes back, so its history stays in one place. The issue's
// description starts with a hidden line, <!-- driftwatch:incident=KEY -->,
// and the issue gets the configured labels (default "driftwatch") and
// the class label "driftwatch:drift", "driftwatch:forbidden" or
// "driftwatch:errored" (ClassLabel), always. The per-incident state the
// outbox keeps is JSON {"repository","issue"}: the number. It
// is kept after a resolve (the outbox keys it by incident key), so the
// next incident of the key reopens the issue by its number.
//
// Without a state for this repository (the incident's first message, a
// state pruned after a long-resolved incident, a changed repository, or a
// crash replay), the issue is looked for first: GET
// /repos/{owner}/{repo}/issues?labels=driftwatch:CLASS&state=all, newest
// first, 100 a page, following Link's next for at most 10 pages, for a
// body with the incident's marker (pull requests skipped). The list, not
// the search API, because search is eventually consistent: an issue
// created a moment ago may not be found there, and a second issue would
// be opened. Only if none is found is one created (POST .../issues with
// title, body, labels), and its number is saved with saveState at once,
// before anything else can fail.
//
// Then, with the number:
//
//   - open, update, renotify, remediation: PATCH .../issues/{n} with the
//     title (notify.Title), the description and state "open", so a closed
//     issue is reopened (GitHub sets state_reason "reopened"): the issue
//     mirrors the incident, and closing it by hand does not silence
//     driftwatch. Then, except for open, a comment (POST
//     .../issues/{n}/comments) says what happened: the findings added,
//     removed and changed, still open since when, what became of a
//     remediation (with its apply run's link and why it failed).
//   - resolve: the closing comment, then PATCH with the description, state
//     "closed" and state_reason "completed". A resolve of an incident with
//     no issue creates none (and its state becomes empty).
//
// The description is rewritten in place on every message: the title, the
// status (open since when, or resolved when), severity (and how many steps
// failed remediations raised it), workspace and class, owner, team and
// labels, the last run and the status page's link (Incident.URL), and a
// table of the findings (kind, action, address, attribute paths: never
// values), at most 200 rows with the rest counted, within GitHub's 65536
// characters. Anything a user or Terraform wrote (addresses, paths,
// errors, names) is a code span or a code block, so no mention, issue
// reference, link or HTML in it is rendered. Edits to the description
// are overwritten: people comment instead. Labels are set when the issue
// is created and never changed afterwards (a PATCH does not send them),
// so labels people add stay.
//
// # Resends and crash replays
//
// Each comment ends with a hidden <!-- driftwatch:message=ID --> line.
// Before commenting, the notifier lists the comments updated
// since the message's time less an hour (GET .../comments?since=...; at
// most 5 pages of 100) and posts nothing if one has the message's marker.
// That costs one GET per comment, the price of never commenting twice;
// the hour covers a daemon clock up to an hour ahead of GitHub's. A
// comment is not looked for on an issue this call created.
//
// A crash between GitHub accepting a request and the outbox recording the
// delivery replays the message with the previous state:
//
//   - after a create, with no state: the list finds the issue by its
//     marker (no second issue); if its title, description and state are
//     already what the message sets, no PATCH is sent; a comment already
//     posted is found by its marker (no second comment).
//   - with the number: the PATCH is sent again (idempotent: the
//     same title, description and state) and the comment is not posted
//     twice. A resolve replayed after it closed the issue closes it again,
//     which changes nothing.
//
// What can still double: GitHub silently drops a new issue's labels
// when the token may not set them (logged at error level: give the token
// write access to issues); someone who removes the class label or the
// marker from an issue hides it from the list (a new issue is opened), as
// does an incident whose issue is not among the newest 1000 with its
// class label; a comment whose marker is deleted before a replay is
// posted again.
//
// An issue number from the state that GitHub answers 404, 410 or 301 for
// (the issue was deleted or transferred) is looked for again as above,
// and a new issue is created if it is gone.
//
// # Responses
//
// Each request is one attempt bounded by Config.Timeout; the outbox owns
// retrying. 403 and 429 that are rate limits are retried after
// Retry-After, else after X-RateLimit-Reset when X-RateLimit-Remaining is
// 0, else (a secondary rate limit naming no time) after a minute; a 429
// naming no time is left to the outbox's backoff. 408, 5xx, network
// errors and timeouts are retried. Anything else is permanent, with
// GitHub's message and a 422's field errors (redacted, bounded) in the
// error, which is what the notifier's status shows: 401 bad credentials,
// 403 without a rate limit (the token lacks Issues write, or the issue is
// locked), 404 (no such repository, or the token cannot see it), 410
// (issues are disabled), 422. Redirects are never followed (a 301 for a
// renamed repository says to set repository to its new name): the token
// goes with every request. go-github's own rate-limit bookkeeping is off,
// so every request reaches GitHub, which decides.
//
// # Secrets
//
// The token needs read and write access to the repository's issues: a
// fine-grained personal access token or a GitHub App installation token
// with the Issues permission (read and write), or a classic token with
// the repo scope (public_repo for a public repository). It is read from a
// file and sent only in the Authorization header
// ("Bearer"), over https (http only to a loopback address). Errors never
// quote go-github's error text (it holds the request URL); they are built
// from the status, GitHub's message and field errors, with the token
// replaced by "[REDACTED]" wherever a server echoes it.
package github
