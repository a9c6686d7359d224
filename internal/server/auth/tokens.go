package auth

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

	"github.com/driftwatch/driftwatch/internal/config"
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

// offeredToken returns the token a request offers for a read: the bearer
// token, or the password of HTTP Basic auth with any user name (what a
// browser's sign-in dialog sends). offered reports an Authorization header
// at all, usable or not.
//
// Basic auth is accepted for reads only: a browser replays Basic
// credentials on its own, also on requests another site's page makes it
// send, so a mutating endpoint taking them could be called cross-site.
// Mutating endpoints (unsafe methods) take the bearer token alone.
func offeredToken(r *http.Request) (tok []byte, offered bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, false
	}
	if tok, ok := bearer(h); ok {
		return tok, true
	}
	if !SafeMethod(r.Method) {
		return nil, true
	}
	if _, pw, ok := r.BasicAuth(); ok && strings.TrimSpace(pw) != "" {
		return []byte(strings.TrimSpace(pw)), true
	}
	return nil, true
}

// namedToken is an API token: the file that holds it (read on every
// request, so rotation needs no restart) and the identity it stands for.
type namedToken struct {
	name, file, key string // key: the config key, for errors
	role            Role
	scope           config.WorkspaceScope
}

// metricsToken reports whether r offers the scrape token of /metrics
// (server.metrics_token_file).
func (a *Authenticator) metricsToken(r *http.Request) bool {
	if a.metrics.file == "" {
		return false
	}
	got, _ := offeredToken(r)
	if got == nil {
		return false
	}
	want, err := a.readCredential(a.metrics.file, a.metrics.key)
	return err == nil && tokenEqual(got, want)
}

// readCredential reads a credential file (readToken) and reports a
// problem with it once per change: a file that cannot be read (its
// credential is revoked until it can), or one that is weak (shorter than
// config.MinServerTokenLength, readable by other users: the config
// refuses those at start; a rotated file is warned about). key is the
// Options field, for the log.
func (a *Authenticator) readCredential(file, key string) ([]byte, error) {
	tok, err := readToken(file)
	switch {
	case err != nil:
		a.noteFile(file, key, "credential file unusable: what it held is refused until it is readable again", err)
	default:
		a.noteFile(file, key, "weak credential file: it is used, but the config check refuses it", config.ServerTokenProblem(file, tok))
	}
	return tok, err
}

// noteFile logs problem (nil: none) of a credential file when it differs
// from the last one logged for the file.
func (a *Authenticator) noteFile(file, key, msg string, problem error) {
	text := ""
	if problem != nil {
		text = msg + ": " + problem.Error()
	}
	a.filesMu.Lock()
	last, seen := a.files[file]
	a.files[file] = text
	a.filesMu.Unlock()
	switch {
	case text == last:
	case problem != nil:
		a.logger.Warn(msg, "file", file, "option", key, "err", problem.Error())
	case seen:
		a.logger.Info("credential file usable again", "file", file, "option", key)
	}
}
