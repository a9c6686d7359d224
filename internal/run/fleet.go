package run

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/store"
)

// storeFleet is the daemon's pipeline.Fleet: every configured workspace
// (scans aside) with the managed instances its recorded state holds, read
// from the store at each scan, so that every replica sees the same. A
// workspace without them (never checked successfully, or last checked by
// a driftwatch that did not record them) is unknown.
type storeFleet struct {
	store interface {
		Workspaces(ctx context.Context) ([]store.WorkspaceState, error)
	}
	inv Inventory
}

func (f storeFleet) Managed(ctx context.Context) ([]unmanaged.Workspace, []string, error) {
	states, err := f.store.Workspaces(ctx)
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]store.WorkspaceState, len(states))
	for _, s := range states {
		byName[s.Workspace] = s
	}
	var known []unmanaged.Workspace
	var unknown []string
	for _, name := range f.inv.Names() {
		if t, ok := f.inv.Target(name); !ok || t.Scan != nil {
			continue
		}
		st, ok := byName[name]
		if !ok || st.Managed == nil {
			unknown = append(unknown, name)
			continue
		}
		known = append(known, unmanaged.Workspace{Name: name, Managed: st.Managed})
	}
	return known, unknown, nil
}
