// Package runid mints run ids, in one format for every run: queued by the
// scheduler, started without a queue entry, applying a remediation, or run
// by a one-shot audit. An id is 16 lowercase hex digits (64 random bits
// from crypto/rand): safe in URLs, log lines, file names and Kubernetes
// labels, and unique without coordination (a collision becomes likely only
// after billions of ids). Ids are not ordered: sort runs by their times.
//
// It imports only the standard library, so every package may use it.
package runid

import (
	"crypto/rand"
	"encoding/hex"
)

// Len is the length of an id.
const Len = 16

// New returns a new random run id: Len lowercase hex digits. It is safe for
// concurrent use.
func New() string {
	var b [Len / 2]byte
	// crypto/rand.Read never fails: it panics if the OS cannot supply
	// randomness.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
