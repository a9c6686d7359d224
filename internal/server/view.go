package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

// StatusUnknown is the status of a configured workspace that has never
// finished a run.
const StatusUnknown drift.Status = "unknown"

// workspaceView is a configured workspace merged with its stored state.
type workspaceView struct {
	WorkspaceInfo
	State  store.WorkspaceState // zero if it never finished a run
	Status drift.Status         // State.Status, or StatusUnknown
	Counts drift.Counts
}

// mergeWorkspace combines a configured workspace with its state (ok false:
// none stored).
func mergeWorkspace(info WorkspaceInfo, st store.WorkspaceState, ok bool) workspaceView {
	v := workspaceView{WorkspaceInfo: info, Status: StatusUnknown}
	if !ok {
		return v
	}
	v.State = st
	if st.Status.Severity() >= 0 {
		v.Status = st.Status
	}
	v.Counts = drift.CountFindings(st.Findings)
	return v
}

// mergeWorkspaces merges every configured workspace with its state, by name.
func mergeWorkspaces(infos []WorkspaceInfo, states []store.WorkspaceState) []workspaceView {
	byName := make(map[string]store.WorkspaceState, len(states))
	for _, st := range states {
		byName[st.Workspace] = st
	}
	out := make([]workspaceView, 0, len(infos))
	for _, info := range infos {
		st, ok := byName[info.Name]
		out = append(out, mergeWorkspace(info, st, ok))
	}
	slices.SortFunc(out, func(a, b workspaceView) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// sortBySeverity orders views most severe first (errored, forbidden,
// drift, validation, pending, clean, unknown), then longest in that
// status first (oldest State.Since; an unknown since last), then by name.
func sortBySeverity(vs []workspaceView) {
	slices.SortFunc(vs, compareSeverity)
}

func compareSeverity(a, b workspaceView) int {
	if c := cmp.Compare(b.Status.Severity(), a.Status.Severity()); c != 0 {
		return c
	}
	if az, bz := a.State.Since.IsZero(), b.State.Since.IsZero(); az != bz {
		if az {
			return 1
		}
		return -1
	}
	if c := a.State.Since.Compare(b.State.Since); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// summaryStatuses is the order statuses are counted in on the status page.
var summaryStatuses = []drift.Status{
	drift.StatusErrored, drift.StatusForbidden, drift.StatusDrift,
	drift.StatusValidation, drift.StatusPending, drift.StatusClean, StatusUnknown,
}

// configured returns the configured workspace called name.
func (s *Server) configured(name string) (WorkspaceInfo, bool) {
	for _, w := range s.o.Control.Workspaces() {
		if w.Name == name {
			return w, true
		}
	}
	return WorkspaceInfo{}, false
}

// errNotConfigured marks a workspace that is not in the config.
var errNotConfigured = errors.New("workspace not configured")

// workspaces returns every configured workspace with its state, by name.
func (s *Server) workspaces(ctx context.Context) ([]workspaceView, error) {
	infos := s.o.Control.Workspaces()
	states, err := s.o.Store.Workspaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workspace states: %w", err)
	}
	return mergeWorkspaces(infos, states), nil
}

// workspace returns one configured workspace with its state, or an error
// matching errNotConfigured.
func (s *Server) workspace(ctx context.Context, name string) (workspaceView, error) {
	info, ok := s.configured(name)
	if !ok {
		return workspaceView{}, fmt.Errorf("workspace %q: %w", name, errNotConfigured)
	}
	st, err := s.o.Store.Workspace(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return mergeWorkspace(info, store.WorkspaceState{}, false), nil
	case err != nil:
		return workspaceView{}, fmt.Errorf("workspace %q: state: %w", name, err)
	}
	return mergeWorkspace(info, st, true), nil
}

// workspacePath is the path of a workspace's page, under the external
// URL's path.
func workspacePath(prefix, name string) string {
	return prefix + "/workspaces/" + url.PathEscape(name)
}

// workspaceURL is the link to a workspace's page: absolute when
// ExternalURL is set.
func (s *Server) workspaceURL(name string) string {
	if s.base != "" {
		return s.base + "/workspaces/" + url.PathEscape(name)
	}
	return workspacePath(s.prefix, name)
}

// runURL is the link to a run's page: absolute when ExternalURL is set.
func (s *Server) runURL(id string) string {
	if s.base != "" {
		return s.base + "/runs/" + url.PathEscape(id)
	}
	return s.prefix + "/runs/" + url.PathEscape(id)
}

// --- JSON shapes ---

// jsonTime is a time encoded as RFC 3339 in UTC, or null when zero.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + tt.UTC().Format(time.RFC3339) + `"`), nil
}

type apiWorkspace struct {
	Name              string            `json:"name"`
	Owner             string            `json:"owner"`
	Labels            map[string]string `json:"labels"`
	Schedule          string            `json:"schedule"`
	Status            drift.Status      `json:"status"`
	Since             jsonTime          `json:"since"`
	LastRunAt         jsonTime          `json:"last_run_at"`
	LastSuccessAt     jsonTime          `json:"last_success_at"`
	NextRun           jsonTime          `json:"next_run"`
	LastRunID         string            `json:"last_run_id"`
	ConsecutiveErrors int               `json:"consecutive_errors"`
	Counts            drift.Counts      `json:"counts"`
	Error             string            `json:"error"`
	URL               string            `json:"url"`
}

type apiWorkspaceDetail struct {
	apiWorkspace
	Findings  []apiFinding  `json:"findings"`
	Incidents []apiIncident `json:"incidents"`
}

// apiIncident is an open or confirming incident: its severity and the
// severity rule that set it (empty: its class's severity).
type apiIncident struct {
	Key          string    `json:"key"`
	Class        string    `json:"class"`
	State        string    `json:"state"`
	Severity     string    `json:"severity"`
	SeverityRule string    `json:"severity_rule"`
	Since        time.Time `json:"since"`
	NotifiedAt   time.Time `json:"notified_at,omitzero"`
	Findings     int       `json:"findings"`
}

func toAPIIncidents(ins []store.Incident) []apiIncident {
	out := make([]apiIncident, 0, len(ins))
	for _, in := range ins {
		out = append(out, apiIncident{
			Key: in.Key, Class: in.Class, State: string(in.State), Severity: in.Severity, SeverityRule: in.SeverityRule,
			Since: in.OpenedAt, NotifiedAt: in.NotifiedAt, Findings: len(in.Findings),
		})
	}
	return out
}

// liveIncidents are a workspace's open and confirming (pending)
// incidents, open first, then by class.
func (s *Server) liveIncidents(ctx context.Context, name string) ([]store.Incident, error) {
	if s.o.Incidents == nil {
		return nil, nil
	}
	all, err := s.o.Incidents.Incidents(ctx, name)
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

type apiFinding struct {
	Kind       drift.Kind `json:"kind"`
	Address    string     `json:"address"`
	Type       string     `json:"type"`
	Action     string     `json:"action"`
	Attributes []string   `json:"attributes"`
	SeenIn     []string   `json:"seen_in"`
	Ignored    bool       `json:"ignored"`
	// Detail explains a backend finding (e.g. "mode 0644: chmod 600").
	Detail string `json:"detail,omitempty"`
}

type apiRun struct {
	ID              string       `json:"id"`
	Workspace       string       `json:"workspace"`
	Trigger         string       `json:"trigger"`
	Status          drift.Status `json:"status"`
	StartedAt       jsonTime     `json:"started_at"`
	FinishedAt      jsonTime     `json:"finished_at"`
	DurationSeconds *float64     `json:"duration_seconds"`
	Error           string       `json:"error"`
	Tool            string       `json:"tool"`
	Counts          drift.Counts `json:"counts"`
}

type apiRunDetail struct {
	apiRun
	Findings []apiFinding `json:"findings"`
	Phases   []apiPhase   `json:"phases"`
	URL      string       `json:"url"` // the run's page (absolute when ExternalURL is set)
}

type apiPhase struct {
	Name            string  `json:"name"`
	DurationSeconds float64 `json:"duration_seconds"`
}

func (s *Server) toAPIWorkspace(v workspaceView) apiWorkspace {
	labels := map[string]string{}
	maps.Copy(labels, v.Labels)
	return apiWorkspace{
		Name:              v.Name,
		Owner:             v.Owner,
		Labels:            labels,
		Schedule:          v.Schedule,
		Status:            v.Status,
		Since:             jsonTime(v.State.Since),
		LastRunAt:         jsonTime(v.State.LastRunAt),
		LastSuccessAt:     jsonTime(v.State.LastSuccessAt),
		NextRun:           jsonTime(v.NextRun),
		LastRunID:         v.State.LastRunID,
		ConsecutiveErrors: v.State.ConsecutiveErrors,
		Counts:            v.Counts,
		Error:             v.State.Error,
		URL:               s.workspaceURL(v.Name),
	}
}

// sortedFindings returns a sorted copy of fs (most severe kind first).
func sortedFindings(fs []drift.Finding) []drift.Finding {
	out := slices.Clone(fs)
	drift.SortFindings(out)
	return out
}

func toAPIFindings(fs []drift.Finding) []apiFinding {
	out := make([]apiFinding, 0, len(fs))
	for _, f := range sortedFindings(fs) {
		out = append(out, apiFinding{
			Kind:       f.Kind,
			Address:    f.Address,
			Type:       f.Type,
			Action:     f.Action,
			Attributes: nonNil(f.Attributes),
			SeenIn:     nonNil(f.SeenIn),
			Ignored:    f.Ignored,
			Detail:     f.Detail,
		})
	}
	return out
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return slices.Clone(ss)
}

// runDuration is how long a finished run took (ok false while running).
func runDuration(r store.Run) (time.Duration, bool) {
	if r.FinishedAt.IsZero() || r.StartedAt.IsZero() {
		return 0, false
	}
	return r.FinishedAt.Sub(r.StartedAt), true
}

func toAPIRun(r store.Run) apiRun {
	out := apiRun{
		ID:         r.ID,
		Workspace:  r.Workspace,
		Trigger:    r.Trigger,
		Status:     r.Status,
		StartedAt:  jsonTime(r.StartedAt),
		FinishedAt: jsonTime(r.FinishedAt),
		Error:      r.Error,
		Tool:       r.Tool,
		Counts:     r.Counts(),
	}
	if d, ok := runDuration(r); ok {
		sec := d.Seconds()
		out.DurationSeconds = &sec
	}
	return out
}

func (s *Server) toAPIRunDetail(r store.Run) apiRunDetail {
	phases := make([]apiPhase, 0, len(r.Phases))
	for _, p := range r.Phases {
		phases = append(phases, apiPhase{Name: p.Name, DurationSeconds: p.Duration.Seconds()})
	}
	return apiRunDetail{apiRun: toAPIRun(r), Findings: toAPIFindings(r.Findings), Phases: phases, URL: s.runURL(r.ID)}
}
