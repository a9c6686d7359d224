package notify

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/driftwatch/driftwatch/internal/tlsfiles/cafile"
)

// NoRedirectClient returns a copy of hc (nil: a default client) that never
// follows a redirect: a notifier's credential (in a header, the body or
// the URL) must not be replayed to wherever a server points. The caller's
// client is never changed.
func NoRedirectClient(hc *http.Client) *http.Client {
	c := &http.Client{}
	if hc != nil {
		cp := *hc
		c = &cp
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Endpoint is path under base, a URL its notifier's settings check
// checked (def when empty): base's own path is kept as a prefix.
func Endpoint(base, def, path string) *url.URL {
	u, err := url.Parse(strings.TrimSpace(cmp.Or(base, def)))
	if err != nil {
		u, _ = url.Parse(def)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return u
}

// CAClient returns a client that trusts caFile's certificates besides the
// system's (private CAs, TLS-inspecting proxies, test servers); "" is a
// plain client.
func CAClient(caFile string) (*http.Client, error) {
	if caFile == "" {
		return &http.Client{}, nil
	}
	pool, err := cafile.Pool(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}
