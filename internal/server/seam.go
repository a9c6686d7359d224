package server

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
)

// The seam's names, defined in server/control (what the server asks of
// the daemon), server/auth (who made a request) and server/apitypes (the
// status the daemon reports), and named here too so that the daemon
// imports this package alone. control's and auth's docs say what each
// is for.

type (
	// Control is control.Control.
	Control = control.Control
	// DaemonControl is control.Daemon: a Control made of the daemon's
	// parts.
	DaemonControl = control.Daemon
	// WorkspaceInfo is control.WorkspaceInfo.
	WorkspaceInfo = control.WorkspaceInfo
	// IncidentLister is control.IncidentLister.
	IncidentLister = control.IncidentLister
	// GroupReader is control.GroupReader.
	GroupReader = control.GroupReader
	// BusyError is control.BusyError.
	BusyError = control.BusyError
	// SilenceControl is control.SilenceControl.
	SilenceControl = control.SilenceControl
	// SilenceRequest is control.SilenceRequest.
	SilenceRequest = control.SilenceRequest
	// SilenceError is control.SilenceError.
	SilenceError = control.SilenceError
	// MaintenanceWindow is control.MaintenanceWindow.
	MaintenanceWindow = control.MaintenanceWindow
	// RemediationControl is control.RemediationControl.
	RemediationControl = control.RemediationControl
	// AcceptControl is control.AcceptControl.
	AcceptControl = control.AcceptControl
	// AdoptControl is control.AdoptControl.
	AdoptControl = control.AdoptControl
	// NotifierStatus is apitypes.NotifierStatus.
	NotifierStatus = apitypes.NotifierStatus
	// SandboxStatus is apitypes.SandboxStatus.
	SandboxStatus = apitypes.SandboxStatus
	// Identity is auth.Identity.
	Identity = auth.Identity
)

// The errors a Control returns (control's).
var (
	ErrUnknownWorkspace = control.ErrUnknownWorkspace
	ErrBusy             = control.ErrBusy
	ErrUnavailable      = control.ErrUnavailable
	ErrNotRunning       = control.ErrNotRunning
	ErrHashMismatch     = control.ErrHashMismatch
)

// MethodAnonymous is auth.MethodAnonymous: the Identity.Method of a
// caller without a credential.
const MethodAnonymous = auth.MethodAnonymous

// IsSilenceError reports whether err is a refused silence request
// (control.IsSilenceError).
func IsSilenceError(err error) bool { return control.IsSilenceError(err) }

// CallerActor is auth.CallerActor: the Actor of the identity the server
// authenticated for ctx's request ("": anonymous or none).
func CallerActor(ctx context.Context) string { return auth.CallerActor(ctx) }

// IdentityFrom is auth.IdentityFrom: the identity the server
// authenticated for the request whose context ctx is.
func IdentityFrom(ctx context.Context) (Identity, bool) { return auth.IdentityFrom(ctx) }
