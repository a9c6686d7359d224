package app

import (
	"context"
	"errors"
	"time"

	"github.com/driftwatch/driftwatch/internal/leader"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/silence"
	"github.com/driftwatch/driftwatch/internal/store"
)

var _ server.SilenceControl = control{}

// Silences lists the silences that have not ended.
func (c control) Silences(ctx context.Context) ([]store.Silence, error) {
	return c.d.silences.List(ctx)
}

// AddSilence is silence.Service.Add, its errors mapped by silenceError.
func (c control) AddSilence(ctx context.Context, req server.SilenceRequest) (store.Silence, error) {
	s, err := c.d.silences.Add(ctx, silence.Request(req))
	return s, silenceError(err)
}

// ExpireSilence is silence.Service.Expire, its errors mapped by
// silenceError.
func (c control) ExpireSilence(ctx context.Context, id, by string) (store.Silence, error) {
	s, err := c.d.silences.Expire(ctx, id, by)
	return s, silenceError(err)
}

// silenceError maps an error of the silences onto the server's: a refused
// request (400, with its reason), an unknown workspace (404), a standby
// (503, with leader.ErrStandby's text or the StandbyError's). Any other
// error (nil too) is returned as it is.
func silenceError(err error) error {
	var refused *silence.RequestError
	switch {
	case errors.As(err, &refused):
		return &server.SilenceError{Reason: refused.Reason}
	case errors.Is(err, silence.ErrUnknownWorkspace):
		return server.ErrUnknownWorkspace
	case errors.Is(err, leader.ErrStandby):
		return serverError{err, server.ErrUnavailable}
	}
	return err
}

// MaintenanceWindows reports the configured windows at now.
func (c control) MaintenanceWindows(now time.Time) []server.MaintenanceWindow {
	ws := c.d.silences.Windows(now)
	out := make([]server.MaintenanceWindow, 0, len(ws))
	for _, w := range ws {
		tz := w.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		out = append(out, server.MaintenanceWindow{
			Name: w.Name, Workspaces: w.Match.Workspaces, Labels: w.Match.Labels, Schedule: w.Schedule, TimeZone: tz,
			Duration: time.Duration(w.Duration), Active: w.Active, Ends: w.Ends, NextStart: w.NextStart,
		})
	}
	return out
}
