// Package refusal holds why the daemon refused to queue or cancel a run,
// as errors: ErrUnknownWorkspace (no such workspace is scheduled), ErrBusy
// (its run is already queued or running; a *BusyError names that run) and
// ErrUnavailable (this daemon does not schedule: a standby, starting or
// stopping).
//
// The packages that refuse declare their own errors with Kind, so that
// they match one of these and keep their own text: the scheduler's
// (schedule.ErrUnknownJob, schedule.ErrBusy), the leader's
// (leader.ErrStandby, leader.StandbyError), and the run lifecycle's
// BusyError naming the busy run (run.Manager.Trigger). The server's
// control package names these errors again (control.ErrUnknownWorkspace,
// ...) and its handlers answer by them (404, 409, 503), so the mapping
// of an error onto an answer is written once, where the error is
// declared, and the daemon's wiring maps nothing.
//
// It is a leaf: it imports only the standard library, so that the
// scheduler, the leader, the run lifecycle and the server all import it
// without importing each other.
package refusal
