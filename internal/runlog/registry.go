package runlog

import (
	"context"
	"errors"
	"sync"
)

// ErrCancelled is the context cause of a run stopped by Registry.Cancel
// (the API's POST /api/v1/runs/{id}/cancel). The local runner reports it as
// the run error's reason; the daemon records the run as cancelled.
var ErrCancelled = errors.New("run cancelled")

// ErrNotRunning is Registry.Cancel's error for a run that is not queued or
// running here (the daemon maps it to server.ErrNotRunning).
var ErrNotRunning = errors.New("run is not queued or running")

// Registry tracks the runs in flight in this process: each one's cancel
// function and, once it runs, its live log. It backs server.Control's LiveLog
// and Cancel. Safe for concurrent use.
type Registry struct {
	mu   sync.Mutex
	runs map[string]*entry
}

type entry struct {
	log    *Log
	cancel context.CancelCauseFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{runs: map[string]*entry{}} }

// Add registers a queued or running run, or replaces its registration.
// cancel is called with ErrCancelled by Cancel; it is nil for a run that
// is cancelled elsewhere (a queued run: by the scheduler). log may be nil
// until the run starts (SetLog).
func (r *Registry) Add(id string, log *Log, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[id] = &entry{log: log, cancel: cancel}
}

// SetLog attaches the live log of a registered run.
func (r *Registry) SetLog(id string, log *Log) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.runs[id]; ok {
		e.log = log
	}
}

// Live returns the log of a run in flight, or nil.
func (r *Registry) Live(id string) *Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.runs[id]; ok {
		return e.log
	}
	return nil
}

// Cancel cancels a registered run with cause ErrCancelled; it returns
// ErrNotRunning for a run that is not registered or has no cancel
// function. Cancelling twice is harmless.
func (r *Registry) Cancel(id string) error {
	r.mu.Lock()
	e, ok := r.runs[id]
	r.mu.Unlock()
	if !ok || e.cancel == nil {
		return ErrNotRunning
	}
	e.cancel(ErrCancelled)
	return nil
}

// Remove forgets a run. Call it after the run's log is saved to the store
// and closed, so a log reader always finds it in one place or the other.
func (r *Registry) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.runs, id)
}
