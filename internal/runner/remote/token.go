package remote

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// NewToken returns a fresh per-run token (256 random bits, base64url) and
// its SHA-256, which is all the daemon keeps.
func NewToken() (token string, hash [32]byte) {
	b := make([]byte, 32)
	// crypto/rand.Read never fails (it panics if the OS cannot supply
	// randomness, which no caller could handle better).
	_, _ = rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken returns the SHA-256 of token. A plain hash (no salt, no slow
// KDF) is right here: the token is 256 random bits, not a password, so the
// hash cannot be brute-forced back to it.
func HashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// FormatHash returns the hex form of a token hash (as stored in a Job
// annotation).
func FormatHash(h [32]byte) string { return hex.EncodeToString(h[:]) }

// ParseHash parses FormatHash's output.
func ParseHash(s string) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("token hash %q is not 64 hex digits", s)
	}
	copy(h[:], b)
	return h, nil
}
