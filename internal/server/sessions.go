package server

import (
	"net/http"

	"github.com/driftwatch/driftwatch/internal/store"
)

// The sessions of oidc mode, for admins: GET /api/v1/sessions lists them
// (?subject= one person's), DELETE /api/v1/users/{subject}/sessions signs
// a person out everywhere (audited as session.revoke). A person is the
// provider's subject ("sub") at the configured issuer; the list shows
// each session's name and email beside it. Session ids are never shown:
// the store holds none.

// sessionRoutes mounts the admin routes of sessions (oidc mode only).
func (s *Server) sessionRoutes(mux *router) {
	mux.handle("GET /api/v1/sessions", RoleAdmin, s.apiSessions)
	mux.handle("DELETE /api/v1/users/{subject}/sessions", RoleAdmin, s.apiRevokeSessions)
}

// apiSession is one session in GET /api/v1/sessions.
type apiSession struct {
	Issuer     string   `json:"issuer"`
	Subject    string   `json:"subject"`
	Name       string   `json:"name"`
	Email      string   `json:"email,omitempty"`
	Groups     []string `json:"groups"`
	CreatedAt  jsonTime `json:"created_at"`
	LastSeenAt jsonTime `json:"last_seen_at"`
	// ExpiresAt is when it ends unless used: the sooner of its absolute
	// expiry and its last use plus the idle timeout.
	ExpiresAt jsonTime `json:"expires_at"`
}

// apiSessions serves GET /api/v1/sessions[?subject=SUB]: the live
// sessions, the most recently used first.
func (s *Server) apiSessions(w http.ResponseWriter, r *http.Request) {
	a := s.auth.oidc
	f := store.SessionFilter{Issuer: a.cfg.IssuerURL, Subject: r.URL.Query().Get("subject")}
	list, err := a.sessions.Sessions(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	now := a.now()
	out := make([]apiSession, 0, len(list))
	for _, ses := range list {
		ends := ses.ExpiresAt
		if idle := ses.LastSeenAt.Add(a.idle); idle.Before(ends) {
			ends = idle
		}
		if !now.Before(ends) {
			continue // ended, not yet pruned
		}
		groups := ses.Groups
		if groups == nil {
			groups = []string{}
		}
		out = append(out, apiSession{
			Issuer: ses.Issuer, Subject: ses.Subject, Name: ses.Name, Email: ses.Email, Groups: groups,
			CreatedAt: jsonTime(ses.CreatedAt), LastSeenAt: jsonTime(ses.LastSeenAt), ExpiresAt: jsonTime(ends),
		})
	}
	writeJSON(w, http.StatusOK, struct {
		Sessions    []apiSession `json:"sessions"`
		IdleTimeout string       `json:"idle_timeout"`
		SessionTTL  string       `json:"session_ttl"`
	}{out, a.idle.String(), a.ttl.String()})
}

// apiRevokeSessions serves DELETE /api/v1/users/{subject}/sessions: it
// ends every session of the person, at once (their next request is
// signed out), and says how many.
func (s *Server) apiRevokeSessions(w http.ResponseWriter, r *http.Request) {
	a := s.auth.oidc
	subject := r.PathValue("subject")
	if subject == "" {
		writeError(w, http.StatusBadRequest, "the subject is required")
		return
	}
	n, err := a.sessions.DeleteSessions(r.Context(), store.SessionFilter{Issuer: a.cfg.IssuerURL, Subject: subject})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	by, _ := IdentityFrom(r.Context())
	s.o.Logger.Info("oidc sessions revoked", "subject", subject, "sessions", n, "by", by.Actor())
	writeJSON(w, http.StatusOK, struct {
		Subject string `json:"subject"`
		Revoked int    `json:"revoked"`
	}{subject, n})
}
