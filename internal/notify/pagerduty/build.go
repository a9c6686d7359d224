package pagerduty

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty/pagerdutycfg"
)

// The Events API v2 limits and our own
// bounds, which keep what is cut under our control.
const (
	maxSummary  = 1024                   // payload.summary
	maxDedupKey = 255                    // dedup_key
	maxEvent    = 512000                 // a whole event, in bytes
	maxField    = pagerdutycfg.MaxSource // source, component, group, one address, reason
	maxPath     = 256                    // one attribute path
	maxPaths    = 20                     // attribute paths per finding
	maxFindings = 20                     // findings (or delta entries) in custom_details
)

// Event actions.
const (
	actionTrigger = "trigger"
	actionResolve = "resolve"
)

// client is the event's client field: what PagerDuty shows as the
// monitoring tool, linked to client_url.
const client = "driftwatch"

// event is an Events API v2 alert event, as sent.
type event struct {
	RoutingKey  string   `json:"routing_key"`
	EventAction string   `json:"event_action"`
	DedupKey    string   `json:"dedup_key"`
	Payload     *payload `json:"payload,omitempty"`
	Links       []link   `json:"links,omitempty"`
	Client      string   `json:"client,omitempty"`
	ClientURL   string   `json:"client_url,omitempty"`
}

type payload struct {
	Summary       string   `json:"summary"`
	Source        string   `json:"source"`
	Severity      string   `json:"severity"`
	Timestamp     string   `json:"timestamp,omitempty"`
	Component     string   `json:"component,omitempty"`
	Group         string   `json:"group,omitempty"`
	Class         string   `json:"class,omitempty"`
	CustomDetails *details `json:"custom_details,omitempty"`
}

type link struct {
	Href string `json:"href"`
	Text string `json:"text,omitempty"`
}

// details is payload.custom_details: the incident, its top findings and
// what this event reports. Findings carry addresses, actions and
// attribute paths, never values.
type details struct {
	Event       string            `json:"event"`
	IncidentKey string            `json:"incident_key"`
	Workspace   string            `json:"workspace"`
	Class       string            `json:"class"`
	Severity    string            `json:"severity"`
	Escalated   int               `json:"escalated,omitempty"`
	Since       string            `json:"since,omitempty"`
	RunID       string            `json:"run_id,omitempty"`
	Owner       string            `json:"owner,omitempty"`
	Team        string            `json:"team,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	StatusPage  string            `json:"status_page,omitempty"`
	Error       string            `json:"error,omitempty"`
	Counts      counts            `json:"counts"`
	Findings    []finding         `json:"findings,omitempty"`
	// FindingsOmitted counts the findings not listed (see the status page).
	FindingsOmitted int          `json:"findings_omitted,omitempty"`
	Changes         *changes     `json:"changes,omitempty"`
	Remediation     *remediation `json:"remediation,omitempty"`
}

type counts struct {
	Drift     int `json:"drift"`
	Pending   int `json:"pending"`
	Forbidden int `json:"forbidden"`
}

type finding struct {
	Kind       string   `json:"kind"`
	Action     string   `json:"action"`
	Address    string   `json:"address"`
	Attributes []string `json:"attributes,omitempty"`
	// AttributesOmitted counts the attribute paths not listed.
	AttributesOmitted int      `json:"attributes_omitted,omitempty"`
	SeenIn            []string `json:"seen_in,omitempty"`
	Detail            string   `json:"detail,omitempty"`
	// Provenance is who changed a drift, or the commit behind a pending
	// change (notify.Provenance).
	Provenance string `json:"provenance,omitempty"`
}

// changes is an update's delta.
type changes struct {
	Added   []finding `json:"added,omitempty"`
	Removed []finding `json:"removed,omitempty"`
	Changed []finding `json:"changed,omitempty"`
	Omitted int       `json:"omitted,omitempty"`
}

type remediation struct {
	ID         string `json:"id"`
	Mode       string `json:"mode,omitempty"`
	Result     string `json:"result"`
	Reason     string `json:"reason,omitempty"`
	Resources  int    `json:"resources"`
	ApplyRunID string `json:"apply_run_id,omitempty"`
	ExpiresAt  string `json:"expires_at,omitempty"`
	URL        string `json:"url,omitempty"`
}

// options are the notifier's settings the builder needs.
type options struct {
	routingKey string
	source     string // "": the workspace
	severities map[notify.Severity]string
}

// buildEvent is the event for m: a trigger for open, update, renotify and
// remediation, a resolve for resolve; dedup_key is the incident key.
func buildEvent(m notify.Message, o options) (event, error) {
	in := m.Incident
	if in.Key == "" || len(in.Key) > maxDedupKey {
		return event{}, fmt.Errorf("incident key %q cannot be a dedup_key (want 1 to %d characters)", notify.Truncate(in.Key, 80), maxDedupKey)
	}
	ev := event{RoutingKey: o.routingKey, DedupKey: in.Key}
	if err := m.Check(); err != nil {
		return event{}, err
	}
	if m.Event == notify.EventResolve {
		ev.EventAction = actionResolve
		return ev, nil
	}
	ev.EventAction = actionTrigger
	p := &payload{
		Summary:       notify.Truncate(eventSummary(m), maxSummary),
		Source:        notify.Truncate(notify.OneLine(in.Workspace), maxField),
		Severity:      severityOf(in.Severity, o.severities),
		Group:         notify.Truncate(notify.OneLine(in.Owner), maxField),
		Class:         string(in.Class),
		CustomDetails: buildDetails(m),
	}
	if o.source != "" {
		p.Source, p.Component = o.source, p.Source
	}
	if p.Source == "" {
		p.Source = client
	}
	if !m.At.IsZero() {
		p.Timestamp = m.At.UTC().Format(time.RFC3339)
	}
	ev.Payload = p
	if in.URL != "" {
		ev.Links = append(ev.Links, link{Href: in.URL, Text: notify.Truncate("driftwatch: "+in.Workspace, maxField)})
		ev.ClientURL = in.URL
	}
	if r := m.Remediation; m.Event == notify.EventRemediation && r.URL != "" {
		ev.Links = append(ev.Links, link{Href: r.URL, Text: "Remediation run " + orNone(r.ApplyRunID)})
	}
	ev.Client = client
	return ev, nil
}

// encode marshals ev within PagerDuty's event size: an event over it
// loses its finding lists (the counts stay).
func encode(ev event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	if len(b) <= maxEvent || ev.Payload == nil || ev.Payload.CustomDetails == nil {
		return b, nil
	}
	d := *ev.Payload.CustomDetails
	d.FindingsOmitted += len(d.Findings)
	d.Findings = nil
	d.Changes = nil
	p := *ev.Payload
	p.CustomDetails = &d
	ev.Payload = &p
	b, err = json.Marshal(ev)
	if err == nil && len(b) > maxEvent {
		return nil, errors.New("event too large for PagerDuty even without its findings")
	}
	return b, err
}

// severityOf maps s through m; an unknown severity is error (PagerDuty's
// high urgency), so a gap in the map never silences a page.
func severityOf(s notify.Severity, m map[notify.Severity]string) string {
	if v, ok := m[s]; ok {
		return v
	}
	return SeverityError
}

// eventSummary is the incident's one-line summary, with what this event
// reports: PagerDuty shows it as the alert's title and in its log.
func eventSummary(m notify.Message) string {
	since := m.Incident.Since.UTC().Format(time.RFC3339)
	return notify.OneLine(notify.Title(m.Incident) + notify.EventNote(m, since, func(s string) string { return s }))
}

func buildDetails(m notify.Message) *details {
	in := m.Incident
	d := &details{
		Event:       string(m.Event),
		IncidentKey: in.Key,
		Workspace:   in.Workspace,
		Class:       string(in.Class),
		Severity:    string(in.Severity),
		Escalated:   in.Escalated,
		RunID:       in.RunID,
		Owner:       in.Owner,
		Team:        in.Team,
		StatusPage:  in.URL,
		Error:       notify.Truncate(notify.OneLine(in.Error), maxField),
		Counts:      counts{Drift: in.Counts.Drift, Pending: in.Counts.Pending, Forbidden: in.Counts.Forbidden},
	}
	if !in.Since.IsZero() {
		d.Since = in.Since.UTC().Format(time.RFC3339)
	}
	if len(in.Labels) > 0 {
		d.Labels = maps.Clone(in.Labels)
	}
	d.Findings, d.FindingsOmitted = findings(in.Findings, maxFindings)
	if m.Event == notify.EventUpdate && m.Delta != nil {
		c := &changes{}
		left := maxFindings
		var omitted int
		c.Added, omitted = findings(m.Delta.Added, left)
		left -= len(c.Added)
		c.Omitted += omitted
		c.Removed, omitted = findings(m.Delta.Removed, left)
		left -= len(c.Removed)
		c.Omitted += omitted
		c.Changed, omitted = findings(m.Delta.Changed, left)
		c.Omitted += omitted
		d.Changes = c
	}
	if r := m.Remediation; m.Event == notify.EventRemediation && r != nil {
		d.Remediation = &remediation{
			ID: r.ID, Mode: r.Mode, Result: string(r.Result),
			Reason:    notify.Truncate(notify.OneLine(r.Reason), maxField),
			Resources: r.Resources, ApplyRunID: r.ApplyRunID, URL: r.URL,
		}
		if !r.ExpiresAt.IsZero() {
			d.Remediation.ExpiresAt = r.ExpiresAt.UTC().Format(time.RFC3339)
		}
	}
	return d
}

// findings lists at most limit of fs, and how many it left out.
func findings(fs []drift.Finding, limit int) ([]finding, int) {
	limit = max(limit, 0)
	n := min(len(fs), limit)
	out := make([]finding, 0, n)
	for _, f := range fs[:n] {
		x := finding{
			Kind:       string(f.Kind),
			Action:     f.Action,
			Address:    notify.Truncate(notify.OneLine(f.Address), maxField),
			SeenIn:     f.SeenIn,
			Detail:     notify.Truncate(notify.OneLine(f.Detail), maxField),
			Provenance: notify.Provenance(f),
		}
		for i, a := range f.Attributes {
			if i == maxPaths {
				x.AttributesOmitted = len(f.Attributes) - maxPaths
				break
			}
			x.Attributes = append(x.Attributes, notify.Truncate(notify.OneLine(a), maxPath))
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		out = nil
	}
	return out, len(fs) - n
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
