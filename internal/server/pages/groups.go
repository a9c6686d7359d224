package pages

import (
	"errors"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/store"
)

type groupPageData struct {
	page
	G store.GroupIncident
}

// Group serves GET /groups/{id}: a group incident's page, its cause, its
// times and its members (each linking to its workspace's page).
func (p *Pages) Group(w http.ResponseWriter, r *http.Request) {
	g, err := p.src.GroupIncident(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		p.render(w, r, http.StatusNotFound, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: unknown group", false),
			Heading: "Unknown group",
			Message: "No group incident with this id is kept.",
		})
		return
	}
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, p.group, groupPageData{
		page: p.newPage(r, "driftwatch: group "+g.ID+" ("+string(g.State)+")", g.State == store.IncidentOpen),
		G:    g,
	})
}
