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
	if s.o.Config.TokenFile == "" {
		writeError(w, http.StatusForbidden, "mutating endpoints are disabled: no API token is configured on this driftwatch")
		return false
	}
	want, err := readToken(s.o.Config.TokenFile)
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

// offeredToken returns the token a request offers for a read: the bearer
// token, or the password of HTTP Basic auth with any user name (what a
// browser's sign-in dialog sends). offered reports an Authorization header
// at all, usable or not.
//
// Basic auth is accepted for reads only: a browser replays Basic
// credentials on its own, also on requests another site's page makes it
// send, so a mutating endpoint taking them could be called cross-site.
// Mutating endpoints take the bearer token alone (authorize).
func offeredToken(r *http.Request) (tok []byte, offered bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, false
	}
	if tok, ok := bearer(h); ok {
		return tok, true
	}
	if _, pw, ok := r.BasicAuth(); ok && strings.TrimSpace(pw) != "" {
		return []byte(strings.TrimSpace(pw)), true
	}
	return nil, true
}

// readTokens reports whether any token is configured to read with.
func (s *Server) readTokens() bool {
	return s.o.Config.TokenFile != "" || s.o.Config.ReadTokenFile != ""
}

// readAuthenticated reports whether r carries a read credential: the API
// token or the read token. Both files are read on every call (rotation);
// a file that cannot be read is an error only when the other token does
// not match either.
func (s *Server) readAuthenticated(r *http.Request) (ok, offered bool, err error) {
	got, offered := offeredToken(r)
	if got == nil {
		return false, offered, nil
	}
	var errs []error
	for _, f := range []string{s.o.Config.TokenFile, s.o.Config.ReadTokenFile} {
		if f == "" {
			continue
		}
		want, err := readToken(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tokenEqual(got, want) {
			ok = true
		}
	}
	if ok {
		return true, true, nil
	}
	return false, true, errors.Join(errs...)
}

// Read refusals, for the API and (as plain sentences) the pages.
const (
	msgReadsClosed = "run logs and run pages need a read credential, and none is configured: " +
		"set server.read_token_file (or server.token_file), or server.open_reads: true to open them"
	msgReadMissing = "run logs and run pages need a read credential: the API token or the read token " +
		"(server.read_token_file), as a bearer token or as the password of HTTP Basic auth (any user name)"
	msgReadInvalid = "invalid read credential: it is neither the API token nor the read token"
	msgValuesNoTok = "this log holds the plan's attribute values (log_plan_text): it is served only to a reader " +
		"with a credential, and none is configured: set server.read_token_file or server.token_file"
	msgValues = "this log holds the plan's attribute values (log_plan_text): it is served only with a read credential " +
		"(the API token or the read token), even with server.open_reads"
)

// readAccess decides a read of a run's log or page. ok false means it has
// answered the request (401, 403 or 500). authed reports a valid read
// credential; without one the read passes only because reads are open,
// and a log holding values must still be refused (refuseValues).
func (s *Server) readAccess(w http.ResponseWriter, r *http.Request, page bool) (authed, ok bool) {
	authed, offered, err := s.readAuthenticated(r)
	if err != nil {
		// err names a file, never its content.
		err = fmt.Errorf("check a read credential: %w", err)
		if page {
			s.pageError(w, r, err)
		} else {
			s.o.Logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			writeError(w, http.StatusInternalServerError, "the read token is unavailable (see the driftwatch log)")
		}
		return false, false
	}
	switch {
	case authed, s.o.Config.OpenReads:
		return authed, true
	case !s.readTokens():
		s.refuseRead(w, r, page, http.StatusForbidden, msgReadsClosed)
	case offered:
		s.refuseRead(w, r, page, http.StatusUnauthorized, msgReadInvalid)
	default:
		s.refuseRead(w, r, page, http.StatusUnauthorized, msgReadMissing)
	}
	return false, false
}

// refuseValues refuses a log that holds attribute values to a reader
// without a credential.
func (s *Server) refuseValues(w http.ResponseWriter, r *http.Request, page bool) {
	if !s.readTokens() {
		s.refuseRead(w, r, page, http.StatusForbidden, msgValuesNoTok)
		return
	}
	s.refuseRead(w, r, page, http.StatusUnauthorized, msgValues)
}

// refuseRead answers a refused read: JSON on the API, a page (that makes a
// browser ask for user name and password on 401) on pages.
func (s *Server) refuseRead(w http.ResponseWriter, r *http.Request, page bool, code int, msg string) {
	if code == http.StatusUnauthorized {
		if page {
			w.Header().Set("WWW-Authenticate", `Basic realm="driftwatch"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="driftwatch"`)
		}
	}
	if !page {
		writeError(w, code, msg)
		return
	}
	heading := "Sign in to read this run"
	if code == http.StatusForbidden {
		heading = "Run pages are not open"
	}
	s.render(w, r, code, s.pages.message, messagePageData{
		page:    s.newPage("driftwatch: "+strings.ToLower(heading), false),
		Heading: heading,
		Message: strings.ToUpper(msg[:1]) + msg[1:] + ".",
	})
}
