package control

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// SilenceControl is the daemon's silences and maintenance windows, for
// the API, the CLI and the status page. It is optional: the server serves
// it when server.Options.Control implements it too.
//
// AddSilence's errors: ErrUnknownWorkspace 404, a *SilenceError 400 with
// its text; ExpireSilence's: store.ErrNotFound 404; any other 500.
type SilenceControl interface {
	// Silences lists the silences that have not ended (active or
	// future), soonest end first.
	Silences(ctx context.Context) ([]store.Silence, error)
	// AddSilence starts a silence and returns it as stored.
	AddSilence(ctx context.Context, req SilenceRequest) (store.Silence, error)
	// ExpireSilence ends a silence now; the held messages of the
	// workspaces it released are sent at once (collapsed).
	ExpireSilence(ctx context.Context, id, by string) (store.Silence, error)
	// MaintenanceWindows reports the configured maintenance windows at
	// now.
	MaintenanceWindows(now time.Time) []MaintenanceWindow
}

// SilenceRequest is a new silence: a workspace or labels, for how long
// from when (zero: now), why and who asks.
type SilenceRequest struct {
	Workspace string
	Labels    map[string]string
	StartsAt  time.Time
	For       time.Duration
	Comment   string
	CreatedBy string
}

// SilenceError is a silence request the daemon refuses (400).
type SilenceError struct{ Reason string }

func (e *SilenceError) Error() string { return e.Reason }

// IsSilenceError reports whether err is a refused silence request.
func IsSilenceError(err error) bool {
	var se *SilenceError
	return errors.As(err, &se)
}

// MaintenanceWindow is a configured maintenance window as of a moment:
// whether it is on, and when it ends (on) or next starts (off).
type MaintenanceWindow struct {
	Name string
	// Workspaces (globs) and Labels are what it matches.
	Workspaces []string
	Labels     map[string]string
	Schedule   string // cron expression of its starts, in TimeZone
	TimeZone   string
	Duration   time.Duration
	Active     bool
	// Ends is the end of the current window (Active), NextStart the
	// start of the next one.
	Ends, NextStart time.Time
}
