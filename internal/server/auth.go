package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// maxTokenFileSize bounds the token file so a wrong path (a log file, a
// device) cannot make every request read megabytes.
const maxTokenFileSize = 4 << 10

// readToken reads the bearer token from path: the file's content without
// surrounding whitespace. An empty token is an error, never "no auth".
func readToken(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	if len(b) > maxTokenFileSize {
		return nil, fmt.Errorf("token file is larger than %d bytes", maxTokenFileSize)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, errors.New("token file is empty")
	}
	return tok, nil
}

// bearer returns the credentials of an "Authorization: Bearer <token>"
// header (scheme case-insensitive), or ok false.
func bearer(h string) (tok []byte, ok bool) {
	scheme, cred, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return nil, false
	}
	cred = strings.TrimSpace(cred)
	if cred == "" {
		return nil, false
	}
	return []byte(cred), true
}

// tokenEqual compares in constant time. Hashing first makes the time
// independent of the lengths too.
func tokenEqual(a, b []byte) bool {
	ha, hb := sha256.Sum256(a), sha256.Sum256(b)
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// authorize checks the bearer token of a mutating request and answers the
// request itself (403, 401 or 500) when it fails. The token file is read
// on every call, so a rotated token applies at once; the token is never
// logged or echoed.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	if s.o.TokenFile == "" {
		writeError(w, http.StatusForbidden, "mutating endpoints are disabled: no API token is configured on this driftwatch")
		return false
	}
	want, err := readToken(s.o.TokenFile)
	if err != nil {
		// err names the file, never its content.
		s.o.Logger.Error("cannot authorize request", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "the API token is unavailable (see the driftwatch log)")
		return false
	}
	got, ok := bearer(r.Header.Get("Authorization"))
	if !ok || !tokenEqual(got, want) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="driftwatch"`)
		if !ok {
			writeError(w, http.StatusUnauthorized, "missing bearer token")
		} else {
			writeError(w, http.StatusUnauthorized, "invalid bearer token")
		}
		return false
	}
	return true
}
