package storetest

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/store"
)

// Groups is group incidents in memory, for tests of what reads them
// (the API's clients): GroupIncidents and GroupIncident as
// store.GroupStore answers them, in the slice's order.
type Groups []store.GroupIncident

// GroupIncidents lists the open ones, or with all every one.
func (gs Groups) GroupIncidents(_ context.Context, all bool) ([]store.GroupIncident, error) {
	var out []store.GroupIncident
	for _, g := range gs {
		if all || g.State == store.IncidentOpen {
			out = append(out, g)
		}
	}
	return out, nil
}

// GroupIncident returns one by ID; store.ErrNotFound if unknown.
func (gs Groups) GroupIncident(_ context.Context, id string) (store.GroupIncident, error) {
	for _, g := range gs {
		if g.ID == id {
			return g, nil
		}
	}
	return store.GroupIncident{}, store.ErrNotFound
}
