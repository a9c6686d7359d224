package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Groups serves GET /api/v1/groups[?all=true]: the open group incidents,
// or with all every one (resolved ones too), most recently notified
// first; an empty list when the daemon keeps none.
func (a *API) Groups(w http.ResponseWriter, r *http.Request) {
	all := false
	if v, ok := r.URL.Query()["all"]; ok {
		b, err := strconv.ParseBool(v[0])
		if err != nil || len(v) > 1 {
			respond.Error(w, http.StatusBadRequest, "query parameter all: want true or false, once")
			return
		}
		all = b
	}
	gs, err := a.src.GroupIncidents(r.Context(), all)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	out := apitypes.GroupList{Groups: make([]apitypes.Group, 0, len(gs))}
	for _, g := range gs {
		out.Groups = append(out.Groups, group(g))
	}
	respond.JSON(w, http.StatusOK, out)
}

// Group serves GET /api/v1/groups/{id}: one group incident, open or
// resolved; 404 when unknown.
func (a *API) Group(w http.ResponseWriter, r *http.Request) {
	g, err := a.src.GroupIncident(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "unknown group")
		return
	case err != nil:
		a.internalError(w, r, err)
		return
	}
	respond.JSON(w, http.StatusOK, group(g))
}

// group is a stored group incident as the API shows it: its members'
// addresses, actions and attribute paths, never a value.
func group(g store.GroupIncident) apitypes.Group {
	utc := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.UTC()
	}
	members := make([]apitypes.GroupMember, 0, len(g.Members))
	for _, m := range g.Members {
		f := m.Finding
		members = append(members, apitypes.GroupMember{
			Workspace: m.Workspace, Address: f.Address, Type: f.Type, Kind: f.Kind, Action: f.Action,
			Attributes: nonNil(f.Attributes),
		})
	}
	return apitypes.Group{
		ID: g.ID, Cause: g.Cause, CauseKey: g.CauseKey, Title: g.Title, State: string(g.State), Severity: g.Severity,
		Workspaces: g.Workspaces, Members: members,
		FirstSeen: utc(g.FirstSeen), LastSeen: utc(g.LastSeen), OpenedAt: utc(g.OpenedAt),
		NotifiedAt: utc(g.NotifiedAt), ResolvedAt: utc(g.ResolvedAt),
	}
}
