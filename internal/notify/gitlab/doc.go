// Package gitlab keeps a rolling GitLab issue per incident key (workspace
// and class) in one project, through GitLab's REST API v4 and its
// official Go client (gitlab.com/gitlab-org/api/client-go). It owns a
// pure Markdown builder (issue title, description and notes: build.go,
// tested with exact text) and a thin send whose requests go through
// notify.Sender (Attempt and StatusError; the client library's own
// retries and rate limiter are off). Its settings are gitlabcfg.Config
// (the notifiers[].gitlab block, declared and checked there). It must
// not import config, store, or any other notify vendor package; only the
// notifiers factory constructs it.
//
// The issue is found again by its scoped class label (ClassLabel,
// driftwatch::<class>) and a hidden marker line; each note carries a
// hidden message marker looked for before it is posted. The state,
// {"project","iid","closed"}, outlives the incident, so the next
// incident of the key reopens the same issue.
//
// The requests, the mapping, the responses and what the token needs are
// in docs/alerts/github-gitlab.md; crash replays, in
// docs/architecture/notify.md.
//
// It also opens merge requests (merge.go: OpenChange,
// notify.ChangeOpener) of a pushed branch, in the project the request
// names, with the same token: an opened merge request of the branch into
// the same target is reused.
package gitlab
