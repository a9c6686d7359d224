package config

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxServerTokenFileSize matches the server's bound on a token file.
const maxServerTokenFileSize = 4 << 10

// checkTokenFile checks that a server token file ("" is none) is readable
// and holds a token. Its content is never part of an error.
func checkTokenFile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxServerTokenFileSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	switch {
	case len(b) > maxServerTokenFileSize:
		return fmt.Errorf("%s is larger than %d bytes: it must hold the token alone", path, maxServerTokenFileSize)
	case len(bytes.TrimSpace(b)) == 0:
		return fmt.Errorf("%s is empty", path)
	}
	return nil
}

// MinServerTokenLength is the least length, in characters, of a server
// credential a file holds: an API token, the metrics scrape token, the
// proxy's shared secret. A shorter one can be guessed.
const MinServerTokenLength = 32

// checkServerToken checks a file holding a server credential ("" is
// none): checkTokenFile, then at least MinServerTokenLength characters,
// and a file no other user may read (its mode grants others no read):
// a credential every local account can read is no credential. Its
// content is never part of an error.
func checkServerToken(path string) error {
	if err := checkTokenFile(path); err != nil || path == "" {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return ServerTokenProblem(path, b)
}

// ServerTokenProblem says what is wrong with a server credential read from
// path (b is the file's content), or nil: fewer than MinServerTokenLength
// characters, or a file others may read. The server checks a rotated
// credential with it too. The content is never part of the error.
func ServerTokenProblem(path string, b []byte) error {
	if n := utf8.RuneCount(bytes.TrimSpace(b)); n < MinServerTokenLength {
		return fmt.Errorf("%s holds %d characters, fewer than %d: use a long random token (e.g. openssl rand -hex 32)", path, n, MinServerTokenLength)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return fmt.Errorf("%s is readable by every user (mode %04o): chmod o-r it (e.g. chmod 600), or mount the Secret with defaultMode 0440", path, fi.Mode().Perm())
	}
	return nil
}

// allowedHostName is a DNS name as a Host header carries it: letters, digits,
// hyphens and underscores in dot-separated labels.
var allowedHostName = regexp.MustCompile(`(?i)^[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?(\.[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?)*\.?$`)

// checkAllowedHost checks one server.allowed_hosts entry: a host name, or
// "*." and a domain for its subdomains.
func checkAllowedHost(h string) error {
	name := strings.TrimPrefix(h, "*.")
	switch {
	case h == "*" || name == "*":
		return errors.New(`"*" would let any host name in, which is what DNS rebinding needs: list the names, or "*.example.com" for the subdomains of one domain`)
	case strings.Contains(name, "*"):
		return fmt.Errorf("%q: a wildcard is only allowed as a leading \"*.\"", h)
	case name == "":
		return errors.New("empty host name")
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return fmt.Errorf("%q is an IP address: IP addresses are always allowed, list host names only", h)
	}
	if len(name) > 253 || !allowedHostName.MatchString(name) {
		return fmt.Errorf("%q is not a host name (write the name alone, without scheme, port or path)", h)
	}
	return nil
}

// keyError is an error about one config key.
type keyError struct {
	key string
	err error
}

// checkTLSPair checks server.tls_cert_file and server.tls_key_file: both or
// neither, readable, and a certificate with its key. Key material is never
// part of an error.
func checkTLSPair(cert, key string) *keyError {
	switch {
	case cert == "" && key == "":
		return nil
	case cert == "":
		return &keyError{"server.tls_key_file", errors.New("needs server.tls_cert_file too (set both or neither)")}
	case key == "":
		return &keyError{"server.tls_cert_file", errors.New("needs server.tls_key_file too (set both or neither)")}
	}
	for _, f := range []struct{ key, path string }{{"server.tls_cert_file", cert}, {"server.tls_key_file", key}} {
		if _, err := os.Stat(f.path); err != nil {
			return &keyError{f.key, err}
		}
	}
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return &keyError{"server.tls_cert_file", fmt.Errorf("%s and %s are not a certificate and its key: %w", cert, key, err)}
	}
	return nil
}

// WorkspaceURL is the workspace's page under external_url, for links in
// alerts and proposals ("" without external_url).
func (s Server) WorkspaceURL(workspace string) string {
	if s.ExternalURL == "" {
		return ""
	}
	return s.ExternalURL + "/workspaces/" + workspace
}

// GroupURL is a group's page under ExternalURL, "" without one.
func (s Server) GroupURL(id string) string {
	if s.ExternalURL == "" {
		return ""
	}
	return s.ExternalURL + "/groups/" + id
}
