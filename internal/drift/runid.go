package drift

import (
	"crypto/rand"
	"encoding/hex"
)

// RunIDLen is the length of a run id.
const RunIDLen = 16

// NewRunID mints a run id, in one format for every run: queued by the
// scheduler, started without a queue entry, applying a remediation, or run
// by a one-shot audit. An id is RunIDLen lowercase hex digits (64 random
// bits from crypto/rand): safe in URLs, log lines, file names and
// Kubernetes labels, and unique without coordination (a collision becomes
// likely only after billions of ids). Ids are not ordered: sort runs by
// their times. It is safe for concurrent use.
func NewRunID() string {
	var b [RunIDLen / 2]byte
	// crypto/rand.Read never fails: it panics if the OS cannot supply
	// randomness.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
