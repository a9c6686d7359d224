package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// CSRF: a browser sends a proxy's session cookie, and so comes back with
// the proxy's identity headers, on any request, also one another site's
// page makes it send. A mutating request authenticated by the proxy must
// therefore come from driftwatch's own origin (Sec-Fetch-Site, else
// Origin) and carry the CSRF token of its identity: in the X-CSRF-Token
// header, or the csrf_token field of a form. API tokens need neither: a
// browser never adds a bearer token by itself.
const (
	// CSRFHeader carries a mutating request's CSRF token.
	CSRFHeader = "X-CSRF-Token"
	csrfField  = "csrf_token"
)

// csrfToken is the CSRF token of an identity: an HMAC of who it is under
// a key made at startup, so it is valid until the daemon restarts and
// means nothing for another identity.
func (a *Authenticator) csrfToken(id Identity) string {
	m := hmac.New(sha256.New, a.csrfKey)
	m.Write([]byte("driftwatch csrf\x00" + id.Method + "\x00" + id.Name + "\x00" + id.session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CSRFToken is the CSRF token a page or a client must send back with a
// mutating request ("" when the identity needs none: it is not Ambient).
func (a *Authenticator) CSRFToken(id Identity) string {
	if !id.Ambient() {
		return ""
	}
	return a.csrfToken(id)
}

// CheckCSRF refuses (403) a mutating request from an identity a browser
// presents on its own (the proxy's, a session cookie's: Identity.Ambient)
// that comes from another site or lacks its identity's CSRF token. The
// token is compared in constant time and never logged.
func (a *Authenticator) CheckCSRF(r *http.Request, id Identity) *Refusal {
	if !a.sameOrigin(r) {
		a.logger.Warn("cross-site request refused", "method", r.Method, "path", r.URL.Path,
			"sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		return &Refusal{Code: http.StatusForbidden, Heading: "Refused",
			Message: "cross-site request refused: a change must be made from driftwatch's own pages or by an API client"}
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
			got = r.PostFormValue(csrfField)
		}
	}
	want := a.csrfToken(id)
	if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		return &Refusal{Code: http.StatusForbidden, Heading: "Refused",
			Message: "missing or invalid CSRF token: send the token of GET /api/v1/whoami (csrf_token) in the X-CSRF-Token header"}
	}
	return nil
}

// sameOrigin reports whether a browser says r comes from driftwatch's own
// pages: Sec-Fetch-Site same-origin (or none: typed by the user), else,
// from a browser without fetch metadata, an Origin of the external URL or
// of the request's own Host. A client that sends neither (curl, the CLI)
// is not a browser acting for another site.
func (a *Authenticator) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default: // same-site, cross-site
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null": a sandboxed or file page
	}
	if a.base != "" {
		if b, err := url.Parse(a.base); err == nil && strings.EqualFold(b.Scheme, u.Scheme) && strings.EqualFold(b.Host, u.Host) {
			return true
		}
	}
	return strings.EqualFold(u.Host, r.Host)
}
