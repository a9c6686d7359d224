package server

import (
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
)

// guard wraps a route's handler: it authenticates the request and
// decides (auth.Authenticator.Admit), puts the Identity in its context
// and refuses with 401 (no or an invalid credential, with
// WWW-Authenticate), 403 (a role too low, a proxy header from an
// untrusted peer, a mutating request without its CSRF token); a mutating
// request's body is bounded (413), whether its handler reads it or not
// (respond.ReadBody). A mutating request is recorded in the audit log
// once answered, refused or not (recordAudit).
func (s *Server) guard(a access, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var (
			id  auth.Identity
			out auth.Outcome
		)
		if a.audit != nil && !auth.SafeMethod(r.Method) {
			aw, at := &auditWriter{statusRecorder: statusRecorder{ResponseWriter: w}}, s.o.Now()
			w = aw
			defer s.auditDone(r, a, &id, &out, aw, at)
		}
		page := isPage(r.URL.Path)
		var ref *auth.Refusal
		id, out, ref = s.auth.Admit(r, auth.Need{Role: a.need, Logs: a.logs, Metrics: a.metrics})
		if ref != nil {
			s.refuse(w, r, page, *ref)
			return
		}
		if !auth.SafeMethod(r.Method) {
			if !respond.ReadBody(w, r, respond.MaxBody) {
				return
			}
			if id.Ambient() {
				if ref := s.auth.CheckCSRF(r, id); ref != nil {
					s.refuse(w, r, page, *ref)
					return
				}
			}
		}
		next.ServeHTTP(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	})
}

// refuse answers a refused request: a page on a page route (one that
// makes a browser sign in, or ask for user name and password, on 401),
// else, and for the refusals only the API words (ref.API), the API's
// error with a bearer challenge on 401.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, page bool, ref auth.Refusal) {
	if page && !ref.API {
		s.pages.Refuse(w, r, ref)
		return
	}
	respond.Refuse(w, ref.Code, ref.Message)
}
