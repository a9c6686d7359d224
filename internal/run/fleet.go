package run

import (
	"context"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift/unmanaged"
	"github.com/driftwatch/driftwatch/internal/store"
)

// storeFleet is the daemon's pipeline.Fleet: every configured workspace
// (scans aside) with the managed instances its recorded state holds, read
// from the store at each scan, so that every replica sees the same. A
// workspace without them (its runs errored, or it was last checked by a
// driftwatch that did not record them) is unknown. One never checked at
// all (a new daemon's first round, a workspace just added) is waited for,
// up to wait, re-reading every poll: its first check is queued or running.
type storeFleet struct {
	store interface {
		Workspaces(ctx context.Context) ([]store.WorkspaceState, error)
	}
	inv        Inventory
	wait, poll time.Duration
}

// Fleet waits defaults: how long a scan waits for never-checked
// workspaces, and how often it looks.
const (
	fleetWait = 5 * time.Minute
	fleetPoll = 2 * time.Second
)

func (f storeFleet) Managed(ctx context.Context) ([]unmanaged.Workspace, []string, error) {
	until := time.Now().Add(f.wait)
	for {
		known, unknown, unchecked, err := f.read(ctx)
		if err != nil || unchecked == 0 || !time.Now().Before(until) {
			return known, unknown, err
		}
		select {
		case <-ctx.Done():
			return known, unknown, nil
		case <-time.After(f.poll):
		}
	}
}

// read is the fleet as recorded now; unchecked counts the unknown
// workspaces with no recorded state at all.
func (f storeFleet) read(ctx context.Context) (known []unmanaged.Workspace, unknown []string, unchecked int, err error) {
	states, err := f.store.Workspaces(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	byName := make(map[string]store.WorkspaceState, len(states))
	for _, s := range states {
		byName[s.Workspace] = s
	}
	for _, name := range f.inv.Names() {
		if t, ok := f.inv.Target(name); !ok || t.Scan != nil {
			continue
		}
		st, ok := byName[name]
		if !ok {
			unchecked++
		}
		if !ok || st.Managed == nil {
			unknown = append(unknown, name)
			continue
		}
		known = append(known, unmanaged.Workspace{Name: name, Managed: st.Managed})
	}
	return known, unknown, unchecked, nil
}
