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
