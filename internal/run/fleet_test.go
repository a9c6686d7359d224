package run

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/store"
)

// states answers its n-th read with the n-th list (the last one after).
type states struct {
	reads atomic.Int32
	lists [][]store.WorkspaceState
}

func (s *states) Workspaces(context.Context) ([]store.WorkspaceState, error) {
	n := int(s.reads.Add(1)) - 1
	return s.lists[min(n, len(s.lists)-1)], nil
}

// The daemon's fleet: the configured workspaces' recorded instances; a
// workspace whose instances are unknown is said so, a removed one and the
// scans are left out; one never checked is waited for, within the wait.
func TestStoreFleet(t *testing.T) {
	m := []drift.Managed{{Address: "a.b", Type: "a", ID: "x"}}
	inv := inventory{"net": {}, "empty": {}, "old": {}, "new": {}, "scan": {Scan: &pipeline.Scan{}}}
	before := []store.WorkspaceState{
		{Workspace: "net", Managed: m},
		{Workspace: "empty", Managed: []drift.Managed{}},
		{Workspace: "old"}, // checked before managed instances were recorded
		{Workspace: "removed", Managed: m},
	}
	after := slices.Concat(before, []store.WorkspaceState{{Workspace: "new", Managed: m}})

	st := &states{lists: [][]store.WorkspaceState{before, before, after}}
	f := storeFleet{store: st, inv: inv, wait: time.Minute, poll: time.Millisecond}
	known, unknown, err := f.Managed(t.Context())
	require.NoError(t, err)
	require.Equal(t, int32(3), st.reads.Load(), "waited for new's first check")
	require.Equal(t, []unmanaged.Workspace{{Name: "empty", Managed: []drift.Managed{}}, {Name: "net", Managed: m}, {Name: "new", Managed: m}}, known)
	require.Equal(t, []string{"old"}, unknown)

	// The wait is bounded: new is unknown then.
	f = storeFleet{store: &states{lists: [][]store.WorkspaceState{before}}, inv: inv, wait: 5 * time.Millisecond, poll: time.Millisecond}
	_, unknown, err = f.Managed(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"new", "old"}, unknown)
}
