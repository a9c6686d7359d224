package notify

import "net/http"

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
