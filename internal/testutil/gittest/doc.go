// Package gittest serves bare git repositories over smart HTTP for tests,
// with the real git http-backend behind HTTP Basic auth, and runs git for
// fixtures isolated from the machine's configuration. Two servers
// of the same repository name differ: each has its own directory.
//
// It imports no driftwatch package; the tests of source and of
// remediation/accept/propose use it.
package gittest
