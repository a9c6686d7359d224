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
		return &keyError{"server.tls_cert_file", fmt.Errorf("%s and %s are not a certificate and its key: %v", cert, key, err)}
	}
	return nil
}
