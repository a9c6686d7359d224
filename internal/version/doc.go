// Package version holds build information injected through -ldflags:
// Version and Commit, shown by `driftwatch version` and the daemon's
// status API.
//
// It holds nothing else, imports nothing, and must not import any
// driftwatch package.
package version
