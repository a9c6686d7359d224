package api

import (
	"errors"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
)

// Audit serves GET /api/v1/audit: the entries the query selects
// (view.AuditQuery), newest first, with the query as understood; 400
// naming a bad parameter, 501 when the store keeps no audit log.
func (a *API) Audit(w http.ResponseWriter, r *http.Request) {
	q, err := view.ParseAuditQuery(r.URL.Query(), a.src.Now())
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	es, err := a.src.AuditEntries(r.Context(), q)
	switch {
	case errors.Is(err, view.ErrAuditUnsupported):
		respond.Error(w, http.StatusNotImplemented, err.Error())
		return
	case err != nil:
		a.internalError(w, r, err)
		return
	}
	out := make([]apitypes.AuditEntry, 0, len(es))
	for _, e := range es {
		roles := e.Roles
		if roles == nil {
			roles = []string{}
		}
		out = append(out, apitypes.AuditEntry{ID: e.ID, At: e.At.UTC(), Actor: e.Actor, Method: e.Method, Roles: roles,
			Action: e.Action, Target: e.Target, Result: e.Result, Status: e.Status, Detail: e.Detail, Source: e.Source,
			Count: max(e.Count, 1), Anonymous: e.Anonymous, Peer: e.Peer})
	}
	respond.JSON(w, http.StatusOK, struct {
		Query   view.AuditQuery       `json:"query"`
		Entries []apitypes.AuditEntry `json:"entries"`
	}{q, out})
}
