package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/server"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Silence bounds.
const (
	minSilence = time.Minute
	maxSilence = 30 * 24 * time.Hour
	// maxSilenceText bounds a silence's comment and author.
	maxSilenceText = 500
	// releaseEvery is how often the daemon looks for held messages whose
	// silence or window has ended (a silence expired by the API is
	// released at once).
	releaseEvery = 15 * time.Second
)

var _ server.SilenceControl = control{}

// releaseLoop sends, collapsed, the held messages of every workspace
// nothing holds any more: every releaseEvery and when a silence is
// expired, until ctx is done.
func (d *daemon) releaseLoop(ctx context.Context) {
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	for {
		d.releaseHeld(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.released:
		}
	}
}

// releaseHeld releases the held messages of the workspaces nothing holds
// at now. Errors are logged: the next pass tries again.
func (d *daemon) releaseHeld(ctx context.Context, now time.Time) {
	d.holds.Prune(now)
	wss, err := d.store.HeldWorkspaces(ctx)
	if err != nil {
		d.log.Error("held notifications: list workspaces", "err", err)
		return
	}
	labels := map[string]map[string]string{}
	for _, w := range d.cfg.Load().Workspaces {
		labels[w.Name] = w.Labels
	}
	sent := 0
	for _, ws := range wss {
		if _, held := d.holds.Held(ws, labels[ws], now); held {
			continue
		}
		n, err := d.store.ReleaseHeld(ctx, ws, now, incident.Collapse)
		if err != nil {
			d.log.Error("held notifications: release", "workspace", ws, "err", err)
			continue
		}
		d.log.Info("held notifications released", "workspace", ws, "messages", n)
		sent += n
	}
	if sent > 0 {
		d.outbox.Wake()
	}
}

// Silences lists the silences that have not ended.
func (c control) Silences(ctx context.Context) ([]store.Silence, error) {
	return c.d.store.Silences(ctx, time.Now())
}

// AddSilence checks and stores a silence, and holds its workspaces'
// notifications from its start.
func (c control) AddSilence(ctx context.Context, req server.SilenceRequest) (store.Silence, error) {
	if err := c.d.leader.Ready(); err != nil {
		return store.Silence{}, serverError{err, server.ErrUnavailable}
	}
	now := time.Now().UTC()
	s := store.Silence{
		ID: drift.NewRunID(), Workspace: req.Workspace, Labels: req.Labels, StartsAt: req.StartsAt.UTC(),
		Comment: strings.TrimSpace(req.Comment), CreatedBy: strings.TrimSpace(req.CreatedBy), CreatedAt: now,
	}
	if s.StartsAt.IsZero() || s.StartsAt.Before(now) {
		s.StartsAt = now
	}
	s.EndsAt = s.StartsAt.Add(req.For)
	refuse := func(format string, args ...any) (store.Silence, error) {
		return store.Silence{}, &server.SilenceError{Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case (s.Workspace == "") == (len(s.Labels) == 0):
		return refuse("name a workspace or labels (not both)")
	case req.For < minSilence || req.For > maxSilence:
		return refuse("for must be between %s and %s", minSilence, maxSilence)
	case s.Comment == "":
		return refuse("comment is required: say why, for whoever is paged next")
	case s.CreatedBy == "":
		return refuse("created_by is required")
	case len(s.Comment) > maxSilenceText || len(s.CreatedBy) > maxSilenceText:
		return refuse("comment and created_by are at most %d bytes", maxSilenceText)
	case s.StartsAt.After(now.Add(maxSilence)):
		return refuse("starts_at is more than %s ahead", maxSilence)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if k == "" || s.Labels[k] == "" {
			return refuse("labels need a key and a value")
		}
	}
	if s.Workspace != "" && !slices.ContainsFunc(c.d.cfg.Load().Workspaces, func(w config.Workspace) bool { return w.Name == s.Workspace }) {
		return store.Silence{}, server.ErrUnknownWorkspace
	}
	if err := c.d.store.AddSilence(ctx, s); err != nil {
		return store.Silence{}, err
	}
	c.d.holds.Put(s)
	c.d.log.Info("silence added", "silence", s.ID, "workspace", s.Workspace, "labels", s.Labels, "starts_at", s.StartsAt,
		"ends_at", s.EndsAt, "created_by", s.CreatedBy)
	return s, nil
}

// ExpireSilence ends a silence now and releases what it held.
func (c control) ExpireSilence(ctx context.Context, id, by string) (store.Silence, error) {
	if err := c.d.leader.Ready(); err != nil {
		return store.Silence{}, serverError{err, server.ErrUnavailable}
	}
	s, err := c.d.store.ExpireSilence(ctx, id, time.Now().UTC())
	if err != nil {
		return store.Silence{}, err
	}
	c.d.holds.Put(s)
	c.d.log.Info("silence expired", "silence", s.ID, "by", by)
	select {
	case c.d.released <- struct{}{}:
	default:
	}
	return s, nil
}

// MaintenanceWindows reports the configured windows at now.
func (c control) MaintenanceWindows(now time.Time) []server.MaintenanceWindow {
	ws := c.d.holds.Windows()
	out := make([]server.MaintenanceWindow, 0, len(ws))
	for _, w := range ws {
		on, ends, next := w.At(now)
		tz := w.TimeZone
		if tz == "" {
			tz = "UTC"
		}
		out = append(out, server.MaintenanceWindow{
			Name: w.Name, Workspaces: w.Match.Workspaces, Labels: w.Match.Labels, Schedule: w.Schedule, TimeZone: tz,
			Duration: time.Duration(w.Duration), Active: on, Ends: ends, NextStart: next,
		})
	}
	return out
}
