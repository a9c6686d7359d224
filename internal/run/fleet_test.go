package run

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/store"
)

type states []store.WorkspaceState

func (s states) Workspaces(context.Context) ([]store.WorkspaceState, error) { return s, nil }

// The daemon's fleet: the configured workspaces' recorded instances; a
// workspace never known is unknown, a removed one and the scans are left
// out.
func TestStoreFleet(t *testing.T) {
	m := []drift.Managed{{Address: "a.b", Type: "a", ID: "x"}}
	f := storeFleet{
		store: states{
			{Workspace: "net", Managed: m},
			{Workspace: "empty", Managed: []drift.Managed{}},
			{Workspace: "old"}, // checked before managed instances were recorded
			{Workspace: "removed", Managed: m},
		},
		inv: inventory{"net": {}, "empty": {}, "old": {}, "new": {}, "scan": {Scan: &pipeline.Scan{}}},
	}
	known, unknown, err := f.Managed(t.Context())
	require.NoError(t, err)
	require.Equal(t, []unmanaged.Workspace{{Name: "empty", Managed: []drift.Managed{}}, {Name: "net", Managed: m}}, known)
	require.Equal(t, []string{"new", "old"}, unknown)
}
