package silence

import (
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Window is a compiled maintenance window.
type Window struct {
	config.MaintenanceWindow
	starts cron.Schedule
}

// Windows compiles the config's maintenance windows (validated by config).
func Windows(ws []config.MaintenanceWindow) ([]Window, error) {
	out := make([]Window, 0, len(ws))
	for _, w := range ws {
		s, err := w.Starts()
		if err != nil {
			return nil, fmt.Errorf("maintenance window %q: %w", w.Name, err)
		}
		out = append(out, Window{MaintenanceWindow: w, starts: s})
	}
	return out, nil
}

// maxSteps bounds the walk over overlapping windows (starts closer
// together than the duration).
const maxSteps = 10000

// At reports whether w is on at t and until when, or else when it next
// starts. Windows whose starts are closer together than their duration
// run into one.
func (w Window) At(t time.Time) (active bool, ends, next time.Time) {
	d := time.Duration(w.Duration)
	start := w.starts.Next(t.Add(-d))
	if start.IsZero() || start.After(t) {
		return false, time.Time{}, w.starts.Next(t)
	}
	ends = start.Add(d)
	for range maxSteps {
		s := w.starts.Next(start)
		if s.IsZero() || s.After(ends) {
			break
		}
		start, ends = s, s.Add(d)
	}
	return true, ends, w.starts.Next(ends.Add(-time.Nanosecond))
}

// Matches reports whether w covers the workspace: a name glob (if any)
// and every label (if any).
func (w Window) Matches(workspace string, labels map[string]string) bool {
	if len(w.Match.Workspaces) > 0 && !slices.ContainsFunc(w.Match.Workspaces, func(g string) bool {
		ok, err := path.Match(g, workspace)
		return err == nil && ok
	}) {
		return false
	}
	for k, v := range w.Match.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Hold is why a workspace's notifications are held, and until when.
type Hold struct {
	Until time.Time
	// Silence is the silence holding them, or nil for Window.
	Silence *store.Silence
	Window  string
}

// Book is the daemon's silences and maintenance windows. The zero value
// holds nothing; it is safe for concurrent use.
type Book struct {
	mu       sync.RWMutex
	silences []store.Silence
	windows  []Window
}

// SetSilences replaces the silences (the store's, at start).
func (b *Book) SetSilences(ss []store.Silence) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.silences = slices.Clone(ss)
}

// Put adds or replaces (by ID) one silence.
func (b *Book) Put(s store.Silence) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.IndexFunc(b.silences, func(x store.Silence) bool { return x.ID == s.ID }); i >= 0 {
		b.silences[i] = s
		return
	}
	b.silences = append(b.silences, s)
}

// SetWindows replaces the maintenance windows (config load and reload).
func (b *Book) SetWindows(ws []Window) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.windows = slices.Clone(ws)
}

// Windows returns the maintenance windows.
func (b *Book) Windows() []Window {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return slices.Clone(b.windows)
}

// Held reports what holds the workspace's notifications at t: the
// holder that ends last (ok false: nothing does). Silences and windows
// that end at or before t hold nothing.
func (b *Book) Held(workspace string, labels map[string]string, t time.Time) (h Hold, ok bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for i := range b.silences {
		s := b.silences[i]
		if s.Active(t) && s.Matches(workspace, labels) && s.EndsAt.After(h.Until) {
			h, ok = Hold{Until: s.EndsAt, Silence: &s}, true
		}
	}
	for _, w := range b.windows {
		if !w.Matches(workspace, labels) {
			continue
		}
		if on, ends, _ := w.At(t); on && ends.After(h.Until) {
			h, ok = Hold{Until: ends, Window: w.Name}, true
		}
	}
	return h, ok
}

// Prune drops the silences that ended at or before t.
func (b *Book) Prune(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.silences = slices.DeleteFunc(b.silences, func(s store.Silence) bool { return !s.EndsAt.After(t) })
}
