package remote

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/driftwatch/driftwatch/internal/tlsfiles/cafile"
)

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
	certs, err := cafile.Parse([]byte(pemText))
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
	if _, err := cafile.Parse([]byte(s.CallbackCA)); err != nil {
		return fmt.Errorf("callback_ca: %w", err)
	}
	for _, raw := range []string{s.CallbackURL, s.ProceedURL} {
		if u, err := url.Parse(raw); err == nil && raw != "" && u.Scheme != "https" {
			return fmt.Errorf("callback_ca is set but %q is not an https URL", raw)
		}
	}
	return nil
}
