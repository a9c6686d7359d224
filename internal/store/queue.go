package store

import "context"

// QueueStore records runs from the moment they are queued, before they
// start, so that a run can be named, listed, followed and cancelled while
// it waits for a run slot. A queued run has Status RunQueued, no
// FinishedAt, and as StartedAt the time it was queued until it starts.
//
// A queued run leaves the queue in one of four ways: it starts
// (StartQueuedRun, then FinishRun, FinishRunWithOutcome or FinishRunOnly),
// it is finished without starting (FinishQueuedRun: cancelled), it turns
// out to be no run at all and is deleted (DeleteQueuedRun). A queued run
// survives a restart as queued: RecoverRuns returns it at the next start,
// and the daemon queues it again under its id. Prune never deletes one.
//
// None of these methods changes a workspace's state or incidents. None is
// idempotent: each moves a run out of the queued status, so a second call
// for the same run is an error that changes nothing. Errors are plain (no
// sentinel): the daemon logs them and goes on.
type QueueStore interface {
	// QueueRun records r as queued. ID, Workspace and StartedAt (when it
	// was queued) are required and Trigger is kept; Status, FinishedAt,
	// Error, Tool, Findings and Phases are ignored. An ID that any run
	// already has is an error and nothing is written.
	QueueRun(ctx context.Context, r Run) error
	// StartQueuedRun records the queued run r.ID as running from
	// r.StartedAt, which replaces the queue time; its Trigger stays the
	// queued one's. When no run has r.ID (it was never queued, or its
	// QueueRun failed), r is recorded as running, from r.Workspace,
	// r.Trigger and r.StartedAt (Error, Tool, Findings and Phases are
	// ignored). A run with r.ID that is not queued (running, finished,
	// cancelled, errored) or is another workspace's is an error and is
	// left alone. ID, Workspace and StartedAt are required.
	StartQueuedRun(ctx context.Context, r Run) error
	// FinishQueuedRun records the outcome of a queued run that never
	// started: r.Status (a final status such as RunCancelled; not queued or
	// running), r.Error and r.FinishedAt (required). Its StartedAt stays
	// the queue time. When no run has r.ID (its QueueRun failed), the run
	// is recorded with that outcome from r.Workspace, r.Trigger and
	// r.StartedAt. A run with r.ID that is not queued (it started, or
	// finished) is an error and is left alone. ID, Workspace and StartedAt
	// are required.
	FinishQueuedRun(ctx context.Context, r Run) error
	// DeleteQueuedRun deletes a queued run that turned out to be no run at
	// all (a scheduled slot skipped because its workspace was busy), with
	// its log. An unknown ID, or a run that is not queued, is an error and
	// nothing is deleted.
	DeleteQueuedRun(ctx context.Context, id string) error
}
