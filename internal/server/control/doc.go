// Package control is the seam between the server and the daemon: what
// the server asks of the running daemon, and the outcomes it answers
// with. Control is the configured workspaces (WorkspaceInfo), readiness,
// queueing and cancelling a run, the live log of a run in flight and
// notifier health; SilenceControl (silences and maintenance windows),
// RemediationControl (the remediation controller), AcceptControl
// (accepting drift as code) and AdoptControl (adopting a scan's unmanaged
// resources, synchronously, within AdoptTimeout) are optional, found on
// the same value with a type assertion. IncidentLister reads a
// workspace's incidents, GroupReader the group incidents.
//
// Outcomes cross the seam as the errors named here: ErrUnknownWorkspace,
// ErrBusy (a *BusyError names the busy run) and ErrUnavailable, declared
// in the leaf schedule/refusal; ErrNotRunning (runlog's); ErrHashMismatch
// and *SilenceError, plus store.ErrNotFound, store.ErrConflict and
// errors.ErrUnsupported. The daemon's own errors match them where they
// are declared (schedule.ErrUnknownJob, leader.ErrStandby, ...), so
// nobody maps them; the server's handlers map them onto status codes and
// never learn another package's sentinels.
//
// Daemon is a Control made of the daemon's parts (the current config, the
// run lifecycle, the leader, the store's outbox counts, the remediation
// and silence sides): it builds the server's lists of workspaces and
// notifiers and forwards the rest.
//
// It holds interfaces, plain types, errors and Daemon only: it imports
// config, drift, store, runlog, schedule/refusal and apitypes, never the
// server's other packages. internal/server names every type here again
// (server.Control, server.DaemonControl, ...), so that the daemon imports
// the server alone.
package control
