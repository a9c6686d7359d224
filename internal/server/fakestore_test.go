package server

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// fakeStore is an in-memory store.Store for the server's tests: the server
// only reads, so the writes just fill the maps. err, when set, fails
// every read.
type fakeStore struct {
	mu     sync.Mutex
	runs   map[string]store.Run
	states map[string]store.WorkspaceState
	err    error
	// lastLimit records the limit of the last Runs call.
	lastLimit int
	// incidents are every workspace's incidents (any state).
	incidents []store.Incident
}

// Incidents lists a workspace's incidents, as the store does.
func (f *fakeStore) Incidents(_ context.Context, workspace string) ([]store.Incident, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []store.Incident
	for _, in := range f.incidents {
		if in.Workspace == workspace {
			out = append(out, in)
		}
	}
	return out, nil
}

var _ store.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore {
	return &fakeStore{runs: map[string]store.Run{}, states: map[string]store.WorkspaceState{}}
}

func (f *fakeStore) addRun(r store.Run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[r.ID] = r
}

func (f *fakeStore) setState(st store.WorkspaceState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[st.Workspace] = st
}

func (f *fakeStore) StartRun(_ context.Context, r store.Run) error {
	f.addRun(r)
	return nil
}

func (f *fakeStore) FinishRun(_ context.Context, r store.Run) (before, after store.WorkspaceState, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before = f.states[r.Workspace]
	f.runs[r.ID] = r
	after = before
	after.Workspace, after.Status, after.LastRunID, after.LastRunAt = r.Workspace, r.Status, r.ID, r.StartedAt
	f.states[r.Workspace] = after
	return before, after, nil
}

// RecoverRuns finds nothing: the server never calls it.
func (f *fakeStore) RecoverRuns(context.Context, time.Time, ...string) (store.Recovered, error) {
	return store.Recovered{}, nil
}

func (f *fakeStore) Run(_ context.Context, id string) (store.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.Run{}, f.err
	}
	r, ok := f.runs[id]
	if !ok {
		return store.Run{}, store.ErrNotFound
	}
	return r, nil
}

func (f *fakeStore) Runs(_ context.Context, workspace string, limit int) ([]store.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastLimit = limit
	if f.err != nil {
		return nil, f.err
	}
	var out []store.Run
	for _, r := range f.runs {
		if r.Workspace == workspace {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Run) int { return b.StartedAt.Compare(a.StartedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f *fakeStore) Workspace(_ context.Context, name string) (store.WorkspaceState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.WorkspaceState{}, f.err
	}
	st, ok := f.states[name]
	if !ok {
		return store.WorkspaceState{}, store.ErrNotFound
	}
	return st, nil
}

func (f *fakeStore) Workspaces(context.Context) ([]store.WorkspaceState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := make([]store.WorkspaceState, 0, len(f.states))
	for _, st := range f.states {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b store.WorkspaceState) int { return cmp.Compare(a.Workspace, b.Workspace) })
	return out, nil
}

func (f *fakeStore) Prune(context.Context, int, time.Time) (int, error) { return 0, nil }

func (f *fakeStore) Close() error { return nil }
