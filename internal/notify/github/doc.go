// Package github mirrors driftwatch's incidents as issues of one GitHub
// (or GitHub Enterprise Server) repository, through
// github.com/google/go-github/v75. It owns a pure builder (build.go: the
// issue's title, description and each event's comment as Markdown;
// exact-text tests) and a thin send whose requests go through
// notify.Sender.Attempt; classify adds GitHub's own rules (rate limits
// on 403 and 429, a stale issue on 404, 410 and 301). Its settings are
// githubcfg.Config (the notifiers[].github block, declared and checked
// there). It must not import config, store, or any other notify vendor
// package; only the notifiers factory constructs it.
//
// One incident key (a workspace and class) is one rolling issue, found
// again by its class label and a hidden marker line, reopened when the
// same drift comes back; the per-incident state is the number.
// Each comment carries a hidden message marker that is looked for before
// it is posted, so a resend never comments twice.
//
// The requests, the mapping, the responses and what the token needs are
// in docs/alerts/github-gitlab.md; crash replays and what can still
// double, in docs/architecture/notify.md.
//
// It also opens pull requests (pull.go: OpenChange, notify.ChangeOpener)
// of a pushed branch, in the repository the request names, with the same
// token: an open pull request of the branch into the same base is
// reused, then labelled.
package github
