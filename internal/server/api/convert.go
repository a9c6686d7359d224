package api

import (
	"maps"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The store's records and the server's views as the API shows them
// (internal/server/apitypes).

// at is t as the API writes it (null when zero).
func at(t time.Time) apitypes.Time { return apitypes.Time{Time: t} }

func (a *API) workspace(v view.WorkspaceView) apitypes.Workspace {
	labels := map[string]string{}
	maps.Copy(labels, v.Labels)
	return apitypes.Workspace{
		Name:              v.Name,
		Owner:             v.Owner,
		Labels:            labels,
		Schedule:          v.Schedule,
		Status:            v.Status,
		Since:             at(v.State.Since),
		LastRunAt:         at(v.State.LastRunAt),
		LastSuccessAt:     at(v.State.LastSuccessAt),
		NextRun:           at(v.NextRun),
		Held:              v.Held,
		LastRunID:         v.State.LastRunID,
		ConsecutiveErrors: v.State.ConsecutiveErrors,
		Counts:            v.Counts,
		Error:             v.State.Error,
		URL:               a.src.WorkspaceURL(v.Name),
	}
}

func incidentList(ins []store.Incident) []apitypes.Incident {
	out := make([]apitypes.Incident, 0, len(ins))
	for _, in := range ins {
		out = append(out, apitypes.Incident{
			Key: in.Key, Class: in.Class, State: string(in.State), Severity: in.Severity, SeverityRule: in.SeverityRule,
			Since: in.OpenedAt, NotifiedAt: in.NotifiedAt, Findings: len(in.Findings),
		})
	}
	return out
}

func findings(fs []drift.Finding) []apitypes.Finding {
	out := make([]apitypes.Finding, 0, len(fs))
	for _, f := range view.SortedFindings(fs) {
		out = append(out, apitypes.Finding{
			Kind:             f.Kind,
			Address:          f.Address,
			Type:             f.Type,
			Action:           f.Action,
			Attributes:       nonNil(f.Attributes),
			SeenIn:           nonNil(f.SeenIn),
			Ignored:          f.Ignored,
			Detail:           f.Detail,
			Window:           f.Window,
			Attribution:      f.Attribution,
			AttributionError: f.AttributionError,
			Commit:           f.Commit,
			ManagedBy:        slices.Clone(f.ManagedBy),
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

func runOf(r store.Run) apitypes.Run {
	out := apitypes.Run{
		ID:         r.ID,
		Workspace:  r.Workspace,
		Trigger:    r.Trigger,
		Status:     r.Status,
		StartedAt:  at(r.StartedAt),
		FinishedAt: at(r.FinishedAt),
		Error:      r.Error,
		Tool:       r.Tool,
		Counts:     r.Counts(),
	}
	if d, ok := view.RunDuration(r); ok {
		sec := d.Seconds()
		out.DurationSeconds = &sec
	}
	return out
}

func (a *API) runDetail(r store.Run) apitypes.RunDetail {
	phases := make([]apitypes.Phase, 0, len(r.Phases))
	for _, p := range r.Phases {
		phases = append(phases, apitypes.Phase{Name: p.Name, DurationSeconds: p.Duration.Seconds()})
	}
	return apitypes.RunDetail{Run: runOf(r), Findings: findings(r.Findings), Phases: phases, URL: a.src.RunURL(r.ID)}
}

func silence(s store.Silence, now time.Time) apitypes.Silence {
	labels := map[string]string{}
	maps.Copy(labels, s.Labels)
	return apitypes.Silence{
		ID: s.ID, Workspace: s.Workspace, Labels: labels,
		StartsAt: at(s.StartsAt), EndsAt: at(s.EndsAt),
		Comment: s.Comment, CreatedBy: s.CreatedBy, CreatedAt: at(s.CreatedAt),
		Active: s.Active(now),
	}
}

// window is a maintenance window: Ends is null when it is off.
func window(m control.MaintenanceWindow) apitypes.MaintenanceWindow {
	labels := map[string]string{}
	maps.Copy(labels, m.Labels)
	ends := m.Ends
	if !m.Active {
		ends = time.Time{}
	}
	return apitypes.MaintenanceWindow{
		Name: m.Name, Workspaces: nonNil(m.Workspaces), Labels: labels,
		Schedule: m.Schedule, TimeZone: m.TimeZone, Duration: m.Duration.String(),
		Active: m.Active, Ends: at(ends), NextStart: at(m.NextStart),
	}
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func remediation(r store.Remediation) apitypes.Remediation {
	return apitypes.Remediation{
		ID: r.ID, Workspace: r.Workspace, State: string(r.State), Reason: r.Reason, Mode: r.Mode,
		DetectRunID: r.DetectRunID, ApplyRunID: r.ApplyRunID, Commit: r.Commit,
		ChangeSet: r.ChangeSet, ChangeSetHash: r.ChangeSetHash, Refusals: r.Refusals,
		CreatedAt: r.CreatedAt, ExpiresAt: optTime(r.ExpiresAt), DecidedAt: optTime(r.DecidedAt),
		DecidedBy: r.DecidedBy, FinishedAt: optTime(r.FinishedAt), Outcome: r.Outcome,
	}
}
