package remote

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ParseCAs parses PEM text holding one or more CA certificates (the
// callback's, runner.kubernetes.callback_ca_file) and returns them. It
// refuses text with no certificate, or with a block that is not a
// parsable certificate, so a key or a truncated file is caught where it is
// configured, not at a pod's first post.
func ParseCAs(pemText []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := pemText; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q is not a CERTIFICATE", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// rootsWith returns the system roots plus the CA certificates in pemText
// (none when empty).
func rootsWith(pemText string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool() // no system roots here: the CA alone
	}
	if pemText == "" {
		return pool, nil
	}
	certs, err := ParseCAs([]byte(pemText))
	if err != nil {
		return nil, err
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// CallbackClient returns the HTTP client that posts to a spec's callback
// (and asks its proceed check): it trusts exactly the system roots plus
// the spec's CallbackCA, when set, and speaks TLS 1.2 or later. timeout
// bounds each request.
func (s *Spec) CallbackClient(timeout time.Duration) (*http.Client, error) {
	pool, err := rootsWith(s.CallbackCA)
	if err != nil {
		return nil, fmt.Errorf("callback_ca: %w", err)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: timeout, Transport: t}, nil
}

// checkCallbackCA checks the spec's CallbackCA: certificates, and only for
// https callbacks (an http callback has nothing to verify).
func (s *Spec) checkCallbackCA() error {
	if s.CallbackCA == "" {
		return nil
	}
	if _, err := ParseCAs([]byte(s.CallbackCA)); err != nil {
		return fmt.Errorf("callback_ca: %w", err)
	}
	for _, raw := range []string{s.CallbackURL, s.ProceedURL} {
		if u, err := url.Parse(raw); err == nil && raw != "" && u.Scheme != "https" {
			return fmt.Errorf("callback_ca is set but %q is not an https URL", raw)
		}
	}
	return nil
}
