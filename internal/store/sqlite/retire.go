package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// RetireWorkspace writes, in one transaction and outside any run, what
// decide makes of workspace's stored incidents (every state): the changed
// incidents and the messages to enqueue, checked as FinishRunWithOutcome
// checks decide's (a message's zero CreatedAt becomes at). The daemon
// calls it for a workspace that left the config, whose open incidents
// resolve (incident.Retire). Runs and workspace state are not touched:
// the workspace's history stays. Any failure, decide panicking included,
// writes nothing.
func (s *Store) RetireWorkspace(ctx context.Context, workspace string, at time.Time, decide func(incidents []store.Incident) ([]store.Incident, []store.OutboxMessage)) (err error) {
	defer s.noteWrite(&err)
	fail := func(err error) error { return fmt.Errorf("retire workspace %q: %w", workspace, err) }
	if workspace == "" {
		return fail(fmt.Errorf("workspace is required"))
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	incidents, err := workspaceIncidents(ctx, tx, workspace)
	if err != nil {
		return fail(err)
	}
	changed, enqueue, err := callDecide(s, workspace, "retirement", func() ([]store.Incident, []store.OutboxMessage) {
		return decide(incidents)
	})
	if err != nil {
		return fail(err)
	}
	if err := writeConsequences(ctx, tx, workspace, incidents, changed, enqueue, at.UTC()); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return nil
}
