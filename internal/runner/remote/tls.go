package remote

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/driftwatch/driftwatch/internal/tlsfiles/cafile"
)

// CallbackClient returns the HTTP client that posts to a spec's callback
// (and asks its proceed check): it trusts exactly the system roots plus
// the spec's CallbackCA, when set, and speaks TLS 1.2 or later. timeout
// bounds each request.
func (s *Spec) CallbackClient(timeout time.Duration) (*http.Client, error) {
	pool, err := cafile.PoolWith(s.CallbackCA)
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
	for _, raw := range []string{s.CallbackURL, s.ProceedURL, s.LogURL} {
		if u, err := url.Parse(raw); err == nil && raw != "" && u.Scheme != "https" {
			return fmt.Errorf("callback_ca is set but %q is not an https URL", raw)
		}
	}
	return nil
}
