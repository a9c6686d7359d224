package server

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
	csrfHeader = "X-CSRF-Token"
	csrfField  = "csrf_token"
)

// csrfToken is the CSRF token of an identity: an HMAC of who it is under
// a key made at startup, so it is valid until the daemon restarts and
// means nothing for another identity.
func (a *authenticator) csrfToken(id Identity) string {
	m := hmac.New(sha256.New, a.csrfKey)
	m.Write([]byte("driftwatch csrf\x00" + id.Method + "\x00" + id.Name + "\x00" + id.session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfFor is the CSRF token a page or a client must send back with a
// mutating request ("" when the request's identity needs none).
func (s *Server) csrfFor(id Identity) string {
	if !id.ambient() {
		return ""
	}
	return s.auth.csrfToken(id)
}

// checkCSRF refuses (403) a mutating request from an identity a browser
// presents on its own (the proxy's, a session cookie's: Identity.ambient)
// that comes from another site or lacks its identity's CSRF token. The token is
// compared in constant time and never logged.
func (s *Server) checkCSRF(w http.ResponseWriter, r *http.Request, id Identity, page bool) bool {
	if !s.sameOrigin(r) {
		s.o.Logger.Warn("cross-site request refused", "method", r.Method, "path", r.URL.Path,
			"sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		s.refuse(w, r, page, http.StatusForbidden, "Refused",
			"cross-site request refused: a change must be made from driftwatch's own pages or by an API client")
		return false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
			got = r.PostFormValue(csrfField)
		}
	}
	want := s.auth.csrfToken(id)
	if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		s.refuse(w, r, page, http.StatusForbidden, "Refused",
			"missing or invalid CSRF token: send the token of GET /api/v1/whoami (csrf_token) in the X-CSRF-Token header")
		return false
	}
	return true
}

// sameOrigin reports whether a browser says r comes from driftwatch's own
// pages: Sec-Fetch-Site same-origin (or none: typed by the user), else,
// from a browser without fetch metadata, an Origin of the external URL or
// of the request's own Host. A client that sends neither (curl, the CLI)
// is not a browser acting for another site.
func (s *Server) sameOrigin(r *http.Request) bool {
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
	if s.base != "" {
		if b, err := url.Parse(s.base); err == nil && strings.EqualFold(b.Scheme, u.Scheme) && strings.EqualFold(b.Host, u.Host) {
			return true
		}
	}
	return strings.EqualFold(u.Host, r.Host)
}

// apiWhoami serves GET /api/v1/whoami: who the server takes the caller
// for, with which roles, and (proxy sign-ins) the CSRF token its mutating
// requests must carry.
func (s *Server) apiWhoami(w http.ResponseWriter, r *http.Request) {
	id, _ := IdentityFrom(r.Context())
	roles := make([]string, 0, len(id.Roles)+1)
	for _, x := range id.Roles {
		roles = append(roles, string(x))
	}
	if s.auth.anon == anonViewer && !id.Has(RoleViewer) {
		// anonymous_role: viewer is everyone's: the caller reads all a
		// viewer does.
		roles = append(roles, string(RoleViewer))
	}
	writeJSON(w, http.StatusOK, struct {
		Name      string   `json:"name"`
		Method    string   `json:"method"`
		Roles     []string `json:"roles"`
		CSRFToken string   `json:"csrf_token,omitempty"`
	}{id.Name, id.Method, roles, s.csrfFor(id)})
}
