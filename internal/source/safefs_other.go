//go:build !unix

package source

// openFlags: no O_NONBLOCK or O_NOFOLLOW here; driftwatch ships for Linux.
const openFlags = 0
