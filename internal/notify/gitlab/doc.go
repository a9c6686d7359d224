// Package gitlab keeps a rolling GitLab issue per incident key (workspace
// and class) in one project, through GitLab's REST API v4 and its
// official Go client (gitlab.com/gitlab-org/api/client-go). It owns its
// Config, a pure Markdown builder (issue title, description and notes:
// build.go, tested with exact text) and a thin send. It must not import
// config, store, or any other notify vendor package; only the notifiers
// factory constructs it.
//
// # Mapping
//
// One incident key is one issue, for good: opened on the incident,
// closed when it resolves, reopened when the same workspace drifts the
// same way again. Its title is stable ("Terraform drift in WS",
// "Forbidden resource types in WS", "Drift checks failing for WS"); its
// description is rewritten in place on every message: status (open or
// resolved, since when, for how long), severity (and how many steps
// failed remediations raised it), the last run, the status page, the
// workspace, owner and incident key, and a findings table (kind, action,
// address, attribute paths: never values; 200 rows, the rest counted).
// Each update, remediation, renotify and resolve, and an open that
// reopens the issue, also adds a note (a comment) saying what happened;
// an update's note has a table of what was added, removed or changed.
// Text from plans, workspaces and errors is shown as code, so no @mention,
// reference or HTML in it is rendered.
//
// Labels: Config.Labels (default "driftwatch") and the class label
// ClassLabel ("driftwatch::drift", "driftwatch::forbidden" or
// "driftwatch::errored"), which every issue carries whatever the config
// says: the notifier finds its issues by it. Labels are set on create and
// added (add_labels) on every edit, so labels people add stay.
//
// Requests per message (:id is the URL-encoded project path or the
// numeric ID):
//
//   - no stored issue: GET /projects/:id/issues?labels=<class
//     label>&search=<key>&in=description&state=all (newest first, up to 5
//     pages of 20), keeping only issues whose description carries the
//     hidden marker "<!-- driftwatch:incident=<key> -->" (an open one
//     first, else the newest closed one). If none: POST /projects/:id/issues
//     (a resolve with none does nothing). The iid is saved through
//     saveState at once, before anything else can fail.
//   - PUT /projects/:id/issues/:iid: title, description, add_labels, and
//     state_event "close" on resolve, "reopen" on an open of a closed
//     issue. Skipped for an issue this delivery created.
//   - for a note: GET /projects/:id/issues/:iid/notes (the 100 newest),
//     then POST /projects/:id/issues/:iid/notes unless one of them (not a
//     system note) carries the hidden marker "<!-- driftwatch:message=<ID>
//     -->" of this message. The lookup is skipped on an issue this
//     delivery created.
//
// State is {"project","iid","closed"}. It outlives the incident, so the
// next incident of the key reopens the issue without a lookup; state of
// another project (the config changed), unreadable state or a stored
// issue that is gone (404: deleted) sends the notifier looking again, and
// creating a new issue if there is none.
//
// # Crash replay
//
// The outbox may deliver a message again with the previous state (a
// crash, kill -9 or lost answer between GitLab's change and the record):
//
//   - after the create, before the state was recorded: the lookup finds
//     the issue by its marker and the replay rewrites it; no second issue.
//     GitLab's issue search reads the database, so an issue is found as
//     soon as it is created.
//   - after an edit: the edit is made again with the same content (GitLab
//     changes nothing; close on a closed issue and reopen on an open one
//     are no-ops).
//   - after a note: the replay finds the note's marker and posts no second
//     note, unless more than 100 notes were added to the issue in
//     between.
//   - an open that reopened the issue, replayed without state (after the
//     state was pruned): the issue is open by then, so its "open again"
//     note is posted only if the first attempt had not posted it.
//
// Closing the issue by hand is respected until the incident's next open:
// updates, renotifies and remediations rewrite it and comment but do not
// reopen it.
//
// # Responses
//
// 2xx is done. 401, 403, 404, 400, 422 and any other 4xx are permanent:
// the error carries GitLab's message (redacted, bounded; field errors as
// "title is too long (maximum is 255 characters)") and what to check (the
// token's validity, its api scope and Reporter role, the project). 408,
// 429 and 5xx are retried by the outbox, after Retry-After when sent, else
// after GitLab's RateLimit-Reset, as are network errors, timeouts and a
// 2xx whose answer cannot be read. The client library's own retries and
// rate limiter are off and redirects are never followed: Notify makes one
// attempt per request and the outbox owns retrying and backoff.
//
// # Secrets
//
// The token (a project access token with the api scope and at least the
// Reporter role, or a personal or group access token) is read from a
// file, sent only as the PRIVATE-TOKEN header, over https (http only to a
// loopback address), and replaced by "[REDACTED]" in every error and log
// line, including a server's message that echoes it.
package gitlab
