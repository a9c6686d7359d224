package silence

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Control is s as the server sees it (control.SilenceControl): it
// forwards to s and maps its errors onto the server's (controlError).
func (s *Service) Control() control.SilenceControl { return serverControl{s} }

type serverControl struct{ s *Service }

// Silences lists the silences that have not ended.
func (c serverControl) Silences(ctx context.Context) ([]store.Silence, error) {
	return c.s.List(ctx)
}

// AddSilence is Add, its errors mapped by controlError.
func (c serverControl) AddSilence(ctx context.Context, req control.SilenceRequest) (store.Silence, error) {
	sil, err := c.s.Add(ctx, Request(req))
	return sil, controlError(err)
}

// ExpireSilence is Expire, its errors mapped by controlError.
func (c serverControl) ExpireSilence(ctx context.Context, id, by string) (store.Silence, error) {
	sil, err := c.s.Expire(ctx, id, by)
	return sil, controlError(err)
}

// controlError maps an error of the silences onto the server's: a refused
// request (400, with its reason), an unknown workspace (404). Any other
// error (nil too) is returned as it is: a standby's (leader.ErrStandby, a
// StandbyError) is a control.ErrUnavailable already (503, with its text).
func controlError(err error) error {
	var refused *RequestError
	switch {
	case errors.As(err, &refused):
		return &control.SilenceError{Reason: refused.Reason}
	case errors.Is(err, ErrUnknownWorkspace):
		return control.ErrUnknownWorkspace
	}
	return err
}

// MaintenanceWindows reports the configured windows at now.
func (c serverControl) MaintenanceWindows(now time.Time) []control.MaintenanceWindow {
	ws := c.s.Windows(now)
	out := make([]control.MaintenanceWindow, 0, len(ws))
	for _, w := range ws {
		tz := w.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		out = append(out, control.MaintenanceWindow{
			Name: w.Name, Workspaces: w.Match.Workspaces, Labels: w.Match.Labels, Schedule: w.Schedule, TimeZone: tz,
			Duration: time.Duration(w.Duration), Active: w.Active, Ends: w.Ends, NextStart: w.NextStart,
		})
	}
	return out
}
