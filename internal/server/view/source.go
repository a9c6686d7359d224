package view

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Source is what the API and the pages read, and where they are: the
// store, the daemon's Control with its optional sides, the clock, the
// log, and the server's addresses. Make one with New; it is safe for
// concurrent use.
type Source struct {
	// Store is read, never written.
	Store store.Store
	// Logs holds finished runs' logs (nil: none are served).
	Logs store.LogStore
	// Incidents lists a workspace's incidents (nil: none are shown).
	Incidents control.IncidentLister
	// Groups reads the group incidents (nil: there are none).
	Groups  control.GroupReader
	Control control.Control
	// Rem is Control's remediation side, Sil its silences and maintenance
	// windows; nil when it has none.
	Rem control.RemediationControl
	Sil control.SilenceControl
	// Acc is Control's acceptances of drift as code; nil when it has
	// none.
	Acc control.AcceptControl
	// Adp is Control's adoptions of scans' unmanaged resources; nil when
	// it has none.
	Adp    control.AdoptControl
	Logger *slog.Logger
	Now    func() time.Time
	// Base is the absolute external URL without trailing slash, or "";
	// Prefix its path (routes are served below it), or "".
	Base, Prefix string
	// APIBase is the URL the API is reached at, for the commands pages
	// show: the external URL, else the listen address. Never the
	// request's Host, which the client chooses.
	APIBase string

	// stats bounds and caches the statistics (stats.go).
	stats *statsCache
}

// New returns s ready to serve, with Rem, Sil, Acc and Adp found on
// s.Control.
func New(s Source) *Source {
	s.Rem, _ = s.Control.(control.RemediationControl)
	s.Sil, _ = s.Control.(control.SilenceControl)
	s.Acc, _ = s.Control.(control.AcceptControl)
	s.Adp, _ = s.Control.(control.AdoptControl)
	s.stats = newStatsCache()
	return &s
}

// Configured returns the configured workspace called name.
func (s *Source) Configured(name string) (control.WorkspaceInfo, bool) {
	for _, w := range s.Control.Workspaces() {
		if w.Name == name {
			return w, true
		}
	}
	return control.WorkspaceInfo{}, false
}

// ErrNotConfigured marks a workspace that is not in the config.
var ErrNotConfigured = errors.New("workspace not configured")

// Workspaces returns every configured workspace with its state, by name.
func (s *Source) Workspaces(ctx context.Context) ([]WorkspaceView, error) {
	infos := s.Control.Workspaces()
	states, err := s.Store.Workspaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workspace states: %w", err)
	}
	return mergeWorkspaces(infos, states), nil
}

// Workspace returns one configured workspace with its state, or an error
// matching ErrNotConfigured.
func (s *Source) Workspace(ctx context.Context, name string) (WorkspaceView, error) {
	info, ok := s.Configured(name)
	if !ok {
		return WorkspaceView{}, fmt.Errorf("workspace %q: %w", name, ErrNotConfigured)
	}
	st, err := s.Store.Workspace(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return mergeWorkspace(info, store.WorkspaceState{}, false), nil
	case err != nil:
		return WorkspaceView{}, fmt.Errorf("workspace %q: state: %w", name, err)
	}
	return mergeWorkspace(info, st, true), nil
}

// LiveIncidents are a workspace's open and confirming (pending)
// incidents, open first, then by class.
func (s *Source) LiveIncidents(ctx context.Context, name string) ([]store.Incident, error) {
	if s.Incidents == nil {
		return nil, nil
	}
	all, err := s.Incidents.Incidents(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: incidents: %w", name, err)
	}
	out := slices.DeleteFunc(all, func(in store.Incident) bool { return in.State == store.IncidentResolved })
	slices.SortFunc(out, func(a, b store.Incident) int {
		if (a.State == store.IncidentOpen) != (b.State == store.IncidentOpen) {
			if a.State == store.IncidentOpen {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Class, b.Class)
	})
	return out, nil
}

// Notifiers returns the notifier health, sorted by name, never nil.
func (s *Source) Notifiers(ctx context.Context) ([]apitypes.NotifierStatus, error) {
	ns, err := s.Control.Notifiers(ctx)
	if err != nil {
		return nil, fmt.Errorf("notifiers: %w", err)
	}
	if ns == nil {
		ns = []apitypes.NotifierStatus{}
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	return ns, nil
}

// LiveLog is the log of a run in flight here, nil otherwise
// (Control.LiveLog).
func (s *Source) LiveLog(id string) *runlog.Log { return s.Control.LiveLog(id) }

// Silences returns the current silences and maintenance windows, never
// nil slices. Sil must not be nil.
func (s *Source) Silences(ctx context.Context, now time.Time) ([]store.Silence, []control.MaintenanceWindow, error) {
	sils, err := s.Sil.Silences(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("silences: %w", err)
	}
	wins := s.Sil.MaintenanceWindows(now)
	if sils == nil {
		sils = []store.Silence{}
	}
	if wins == nil {
		wins = []control.MaintenanceWindow{}
	}
	return sils, wins, nil
}

// WorkspacePath is the path of a workspace's page, under prefix (the
// external URL's path).
func WorkspacePath(prefix, name string) string {
	return prefix + "/workspaces/" + url.PathEscape(name)
}

// RunPath is the path of a run's page, under prefix.
func RunPath(prefix, id string) string {
	return prefix + "/runs/" + url.PathEscape(id)
}

// RemediationPath is the path of a remediation's page, under prefix.
func RemediationPath(prefix, id string) string {
	return prefix + "/remediations/" + url.PathEscape(id)
}

// WorkspaceURL is the link to a workspace's page: absolute when the
// external URL is set.
func (s *Source) WorkspaceURL(name string) string {
	if s.Base != "" {
		return s.Base + "/workspaces/" + url.PathEscape(name)
	}
	return WorkspacePath(s.Prefix, name)
}

// RunURL is the link to a run's page: absolute when the external URL is
// set.
func (s *Source) RunURL(id string) string {
	if s.Base != "" {
		return s.Base + "/runs/" + url.PathEscape(id)
	}
	return RunPath(s.Prefix, id)
}
