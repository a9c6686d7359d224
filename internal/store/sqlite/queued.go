package sqlite

import (
	"context"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/store"
)

var _ store.QueueStore = (*Store)(nil)

// Queued runs (store.QueueStore): the daemon records a run when the
// scheduler queues it (so it can be named, followed and cancelled before it
// starts), then starts it, or finishes it without starting (cancelled while
// queued). A queued run the process died with stays queued: RecoverRuns
// returns it to the next process, which queues it again.

// QueueRun records r as queued. ID, Workspace and StartedAt (when it was
// queued) are required, and the ID must be new; Status and FinishedAt are
// ignored.
func (s *Store) QueueRun(ctx context.Context, r store.Run) (err error) {
	defer s.noteWrite(&err)
	if err := checkStart(r); err != nil {
		return fmt.Errorf("queue run %q: %w", r.ID, err)
	}
	queued, err := nanos(r.StartedAt)
	if err != nil {
		return fmt.Errorf("queue run %q: started_at: %w", r.ID, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, NULL, ?, '', '', '[]', '[]')`,
		r.ID, r.Workspace, r.Trigger, queued, string(store.RunQueued))
	if isDuplicate(err) {
		return fmt.Errorf("queue run %q: a run with this id already exists", r.ID)
	}
	if err != nil {
		return fmt.Errorf("queue run %q: %w", r.ID, err)
	}
	return nil
}

// StartQueuedRun records r as running from r.StartedAt: the queued run with
// r.ID starts or, when no run has this ID (it was never queued, or its
// QueueRun failed), it is recorded like StartRun does. A run with this ID
// that is no longer queued (cancelled, errored, started) is an error.
func (s *Store) StartQueuedRun(ctx context.Context, r store.Run) (err error) {
	defer s.noteWrite(&err)
	if err := checkStart(r); err != nil {
		return fmt.Errorf("start run %q: %w", r.ID, err)
	}
	started, err := nanos(r.StartedAt)
	if err != nil {
		return fmt.Errorf("start run %q: started_at: %w", r.ID, err)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?1, ?2, ?3, ?4, NULL, ?5, '', '', '[]', '[]')
ON CONFLICT (id) DO UPDATE SET status = ?5, started_at = ?4 WHERE runs.status = ?6 AND runs.workspace = ?2`,
		r.ID, r.Workspace, r.Trigger, started, string(store.RunRunning), string(store.RunQueued))
	if err != nil {
		return fmt.Errorf("start run %q: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("start run %q: the run is not queued (cancelled or already started)", r.ID)
	}
	return nil
}

// FinishQueuedRun records the outcome of a queued run that never started:
// r.Status (store.RunCancelled), r.Error and r.FinishedAt. When no run has
// this ID yet (its QueueRun failed) it is recorded with that outcome, from
// r.Workspace, r.Trigger and r.StartedAt (when it was queued). A run with
// this ID that is no longer queued is left alone and is an error.
func (s *Store) FinishQueuedRun(ctx context.Context, r store.Run) (err error) {
	defer s.noteWrite(&err)
	if err := checkStart(r); err != nil {
		return fmt.Errorf("finish queued run %q: %w", r.ID, err)
	}
	if r.Status == "" || r.Status == store.RunQueued || r.Status == store.RunRunning || r.FinishedAt.IsZero() {
		return fmt.Errorf("finish queued run %q: a finished status and finished_at are required", r.ID)
	}
	queued, err := nanos(r.StartedAt)
	if err != nil {
		return fmt.Errorf("finish queued run %q: started_at: %w", r.ID, err)
	}
	fin, err := nanos(r.FinishedAt)
	if err != nil {
		return fmt.Errorf("finish queued run %q: finished_at: %w", r.ID, err)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '', '[]', '[]')
ON CONFLICT (id) DO UPDATE SET finished_at = ?5, status = ?6, error = ?7 WHERE runs.status = ?8`,
		r.ID, r.Workspace, r.Trigger, queued, fin, string(r.Status), r.Error, string(store.RunQueued))
	if err != nil {
		return fmt.Errorf("finish queued run %q: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("finish queued run %q: the run is not queued (it started or finished)", r.ID)
	}
	return nil
}

// DeleteQueuedRun deletes a queued run that turned out to be no run at all
// (a scheduled slot skipped because the workspace was busy). A run with
// this ID that is not queued is left alone and is an error.
func (s *Store) DeleteQueuedRun(ctx context.Context, id string) (err error) {
	defer s.noteWrite(&err)
	res, err := s.w.ExecContext(ctx, `DELETE FROM runs WHERE id = ? AND status = ?`, id, string(store.RunQueued))
	if err != nil {
		return fmt.Errorf("delete queued run %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("delete queued run %q: no queued run has this id", id)
	}
	return nil
}
