// Package control is the seam between the server and the daemon: what
// the server asks of the running daemon, and the outcomes it answers
// with. Control is the configured workspaces (WorkspaceInfo), readiness,
// queueing and cancelling a run, the live log of a run in flight and
// notifier health; SilenceControl (silences and maintenance windows)
// and RemediationControl (the remediation controller) are optional, found
// on the same value with a type assertion. IncidentLister reads a
// workspace's incidents.
//
// Outcomes cross the seam as the errors defined here: ErrUnknownWorkspace,
// ErrBusy (a *BusyError names the busy run), ErrUnavailable,
// ErrNotRunning, ErrHashMismatch and *SilenceError, plus store.ErrNotFound,
// store.ErrConflict and errors.ErrUnsupported. The daemon maps its
// scheduler's and run registry's errors onto them (internal/app); the
// server's handlers map them onto status codes and never learn another
// package's sentinels.
//
// It holds interfaces, plain types and errors only: it imports store,
// runlog and apitypes (NotifierStatus), never the server's other
// packages. internal/server names every type here again (server.Control,
// ...), so that the daemon imports the server alone.
package control
