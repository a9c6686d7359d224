// Package runnertest holds runner.Runner stand-ins for tests of the code
// that schedules and records runs (internal/run, internal/app). Only tests
// import it.
package runnertest

import (
	"context"
	"sync"

	"github.com/driftwatch/driftwatch/internal/runner"
	"github.com/driftwatch/driftwatch/internal/terraform"
)

// Blocking stands in for Terraform: a run lasts until its ctx ends, then
// fails with the ctx's cause.
type Blocking struct {
	mu      sync.Mutex
	active  int
	started map[string]bool // run ids it was asked to run
}

// NewBlocking is a Blocking that has run nothing.
func NewBlocking() *Blocking { return &Blocking{started: map[string]bool{}} }

// Run blocks until ctx ends.
func (b *Blocking) Run(ctx context.Context, req terraform.Request) (runner.Result, error) {
	b.mu.Lock()
	b.active++
	b.started[req.RunID] = true
	b.mu.Unlock()
	<-ctx.Done()
	b.mu.Lock()
	b.active--
	b.mu.Unlock()
	return runner.Result{}, &terraform.Error{Phase: "plan", Reason: context.Cause(ctx).Error(), Err: context.Cause(ctx)}
}

// State is how many runs are in Run now, and whether run id was started.
func (b *Blocking) State(id string) (active int, started bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.active, b.started[id]
}
