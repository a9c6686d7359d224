// Package propose proposes a proven accept change (accept.Result, as
// engine.Accept returns it) for review: it pushes the change as one
// commit to a branch of the workspace's git source (source.Git.Push) and
// opens a pull request (GitHub) or merge request (GitLab) of it into the
// source's base branch (source.Git.BaseBranch) through a
// notify.ChangeOpener: a github or gitlab notifier, with the credentials
// of its issues.
//
// The same change is the same proposal. The branch is named after the
// workspace and a hash of the changed files
// (driftwatch/accept/<workspace>-<10 hex>), the commit is deterministic
// (source.Git.Push: Base's date, one author), and the opener reuses an
// open request of the branch; concurrent proposals of one branch in this
// process are serialised. So repeated or concurrent accepts of one
// change give one branch, one commit and one request, Existing after the
// first.
//
// The request's title and body name places (addresses, attributes, the
// repository file and line rewritten, refusals and their reasons) and
// the proof, never a value: the diff alone carries the values, which
// accept never takes from a sensitive attribute.
//
// It imports accept, source and notify only: not app, server, store or
// config (depguard's propose-imports-accept-source-notify). Its caller is
// remediation/acceptance (Do: the daemon's accept and `driftwatch accept
// --propose`), with the workspace's source and the accept.notifier.
package propose
