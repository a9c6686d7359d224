package api

import (
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
)

// The sessions of oidc mode, for admins: GET /api/v1/sessions lists them
// (?subject= one person's), DELETE /api/v1/users/{subject}/sessions signs
// a person out everywhere (audited as session.revoke). A person is the
// provider's subject ("sub") at the configured issuer; the list shows
// each session's name and email beside it. Session ids are never shown:
// the store holds none. Mounted in oidc mode only.

// Sessions serves GET /api/v1/sessions[?subject=SUB]: the live
// sessions, the most recently used first.
func (a *API) Sessions(w http.ResponseWriter, r *http.Request) {
	o := a.auth.OIDC()
	list, err := o.LiveSessions(r.Context(), r.URL.Query().Get("subject"))
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	out := make([]apitypes.Session, 0, len(list))
	for _, ses := range list {
		groups := ses.Groups
		if groups == nil {
			groups = []string{}
		}
		out = append(out, apitypes.Session{
			Issuer: ses.Issuer, Subject: ses.Subject, Name: ses.Name, Email: ses.Email, Groups: groups,
			CreatedAt: at(ses.CreatedAt), LastSeenAt: at(ses.LastSeenAt), ExpiresAt: at(ses.Ends),
		})
	}
	respond.JSON(w, http.StatusOK, struct {
		Sessions    []apitypes.Session `json:"sessions"`
		IdleTimeout string             `json:"idle_timeout"`
		SessionTTL  string             `json:"session_ttl"`
	}{out, o.IdleTimeout().String(), o.SessionTTL().String()})
}

// RevokeSessions serves DELETE /api/v1/users/{subject}/sessions: it
// ends every session of the person, at once (their next request is
// signed out), and says how many.
func (a *API) RevokeSessions(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	if subject == "" {
		respond.Error(w, http.StatusBadRequest, "the subject is required")
		return
	}
	n, err := a.auth.OIDC().RevokeSessions(r.Context(), subject)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	by, _ := auth.IdentityFrom(r.Context())
	a.src.Logger.Info("oidc sessions revoked", "subject", subject, "sessions", n, "by", by.Actor())
	respond.JSON(w, http.StatusOK, struct {
		Subject string `json:"subject"`
		Revoked int    `json:"revoked"`
	}{subject, n})
}
