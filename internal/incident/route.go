package incident

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Route sends a workspace's messages to some notifiers.
type Route struct {
	Match RouteMatch
	// Notifiers are the names of the notifiers to send to. Empty means the
	// default notifiers, so a route can change only the severity or team.
	Notifiers []string
	// Severity overrides the policy's severity per class for these
	// notifiers (e.g. forbidden is critical for the production pager).
	Severity map[notify.Class]notify.Severity
	// Team is the responder team (OpsGenie), overriding the policy's.
	Team string
	// Continue goes on matching the routes after this one; without it the
	// first matching route is the last.
	Continue bool
	// MinSeverity is the lowest severity these notifiers hear of (empty:
	// every severity).
	MinSeverity notify.Severity
}

// RouteMatch selects workspaces. Every set condition must hold; an empty
// match matches every workspace.
type RouteMatch struct {
	// Workspaces are names or path.Match globs ("prod-*"); any may match.
	Workspaces []string
	// Labels must all be present with exactly these values.
	Labels map[string]string
}

// Target is one notifier a workspace's messages go to, with the route's
// overrides.
type Target struct {
	Notifier string
	Severity map[notify.Class]notify.Severity
	Team     string
	// MinSeverity gates what the notifier hears (Enqueue).
	MinSeverity notify.Severity
}

// Matches reports whether the workspace with these labels matches m. A
// malformed glob matches nothing (config validation rejects them).
func (m RouteMatch) Matches(workspace string, labels map[string]string) bool {
	if len(m.Workspaces) > 0 {
		ok := false
		for _, g := range m.Workspaces {
			if hit, err := path.Match(g, workspace); err == nil && hit {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for k, v := range m.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Routes returns the notifiers a workspace's messages go to. Routes are
// tried in order; the first that matches wins, unless it has Continue, in
// which case the following routes are tried too. If none matches, the
// messages go to defaultNotifiers without overrides. A notifier reached by
// several routes is targeted once, with the first route's overrides, so
// nobody is paged twice for one message.
func Routes(routes []Route, defaultNotifiers []string, workspace string, labels map[string]string) []Target {
	var out []Target
	seen := map[string]bool{}
	add := func(names []string, r Route) {
		for _, n := range names {
			if n == "" || seen[n] {
				continue
			}
			seen[n] = true
			out = append(out, Target{Notifier: n, Severity: maps.Clone(r.Severity), Team: r.Team, MinSeverity: r.MinSeverity})
		}
	}
	matched := false
	for _, r := range routes {
		if !r.Match.Matches(workspace, labels) {
			continue
		}
		matched = true
		names := r.Notifiers
		if len(names) == 0 {
			names = defaultNotifiers
		}
		add(names, r)
		if !r.Continue {
			break
		}
	}
	if !matched {
		add(defaultNotifiers, Route{})
	}
	return out
}

// Enqueue turns Decide's messages into outbox rows, one per message and
// target, with the target's severity and team applied. A route's severity
// override is raised by the incident's escalation, so a failed remediation
// raises every target one step from what it pages at. The payload is the
// JSON of the notify.Message (what outbox.Dispatcher decodes); the row ID is
// "<message id>/<notifier>", so it is unique per message and notifier and
// stable across retries. Every row is due at now.
//
// A target with a MinSeverity hears of an incident only while its
// severity is at least that: the message that lifts it there is sent as
// an open (without a delta), the one that takes it below as a resolve,
// and nothing in between.
func Enqueue(now time.Time, msgs []notify.Message, targets []Target) ([]store.OutboxMessage, error) {
	out := make([]store.OutboxMessage, 0, len(msgs)*len(targets))
	for _, m := range msgs {
		for _, t := range targets {
			mm := m
			if s, ok := t.Severity[m.Incident.Class]; ok && s != "" {
				mm.Incident.Severity = Raise(s, m.Incident.Escalated)
				if mm.PrevSeverity != "" {
					mm.PrevSeverity = Raise(s, m.PrevEscalated)
				}
			}
			if !gate(&mm, t.MinSeverity) {
				continue
			}
			if t.Team != "" {
				mm.Incident.Team = t.Team
			}
			payload, err := json.Marshal(mm)
			if err != nil {
				return nil, fmt.Errorf("message %s for notifier %q: encode: %w", m.ID, t.Notifier, err)
			}
			out = append(out, store.OutboxMessage{
				ID:          m.ID + "/" + t.Notifier,
				Notifier:    t.Notifier,
				IncidentKey: m.Incident.Key,
				Payload:     payload,
				CreatedAt:   now,
				NextAttempt: now,
			})
		}
	}
	return out, nil
}

// gate applies a target's minimum severity to m: false drops it, or it
// changes m's event where the incident crosses floor.
func gate(m *notify.Message, floor notify.Severity) bool {
	if floor == "" {
		return true
	}
	now := m.Incident.Severity.AtLeast(floor)
	was := m.PrevSeverity != "" && m.PrevSeverity.AtLeast(floor)
	switch {
	case m.Event == notify.EventOpen:
		return now
	case m.Event == notify.EventResolve:
		return was
	case now && !was:
		m.Event, m.Delta = notify.EventOpen, nil
	case !now && was:
		m.Event, m.Delta, m.Remediation = notify.EventResolve, nil, nil
	}
	return now || was
}
