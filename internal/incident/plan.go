package incident

import (
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Plan is what turns one workspace's runs into incidents and outbox
// messages: its policy and its notifier targets.
type Plan struct {
	Policy  Policy
	Targets []Target
	// Held reports whether the workspace's notifications are held at a
	// moment (a silence, a maintenance window); nil: never.
	Held func(at time.Time) bool
}

// Enqueue is Enqueue to p's targets, the rows marked held when p.Held
// says so at now.
func (p Plan) Enqueue(now time.Time, msgs []notify.Message) ([]store.OutboxMessage, error) {
	out, err := Enqueue(now, msgs, p.Targets)
	if err != nil || p.Held == nil || len(out) == 0 || !p.Held(now) {
		return out, err
	}
	for i := range out {
		out[i].Held = true
	}
	return out, nil
}

// Plans computes each configured workspace's Plan: its effective alert
// policy (alerts: with the workspace's overrides), a link to its status
// page under server.external_url, and its routes' notifier targets.
func Plans(cfg *config.Config) map[string]Plan {
	routes := make([]Route, 0, len(cfg.Alerts.Routes))
	for _, r := range cfg.Alerts.Routes {
		routes = append(routes, Route{
			Match:     RouteMatch{Workspaces: r.Match.Workspaces, Labels: r.Match.Labels},
			Notifiers: r.Notifiers, Severity: severities(r.Severity), Team: r.Team, Continue: r.Continue,
			MinSeverity: notify.Severity(r.MinSeverity),
		})
	}
	out := make(map[string]Plan, len(cfg.Workspaces))
	for _, w := range cfg.Workspaces {
		p := cfg.EffectiveAlertPolicy(w)
		url := cfg.Server.WorkspaceURL(w.Name)
		out[w.Name] = Plan{
			Policy: Policy{
				IncludePending: *p.IncludePending, ConfirmAfter: p.ConfirmAfter, ErroredAfter: p.ErroredAfter,
				RenotifyAfter: time.Duration(p.RenotifyAfter), Severity: severities(p.Severity),
				Rules: rules(cfg.Alerts.SeverityRules, w), Owner: w.Owner, URL: url, Labels: w.Labels,
			},
			Targets: Routes(routes, cfg.Alerts.DefaultNotifiers, w.Name, w.Labels),
		}
	}
	return out
}

// rules are the severity rules whose workspace conditions w meets, without
// them.
func rules(rs []config.SeverityRule, w config.Workspace) []SeverityRule {
	var out []SeverityRule
	for i, r := range rs {
		if !(RouteMatch{Workspaces: r.Match.Workspaces, Labels: r.Match.Labels}).Matches(w.Name, w.Labels) {
			continue
		}
		classes := make([]notify.Class, len(r.Match.Classes))
		for j, c := range r.Match.Classes {
			classes[j] = notify.Class(c)
		}
		out = append(out, SeverityRule{
			Name: r.RuleName(i), Severity: notify.Severity(r.Severity), Classes: classes,
			Types: r.Match.ResourceTypes, Addresses: r.Match.Addresses, Actions: r.Match.Actions,
			Attributes: r.Match.Attributes, OnlyAttributes: r.Match.OnlyAttributes,
		})
	}
	return out
}

func severities(m map[string]string) map[notify.Class]notify.Severity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[notify.Class]notify.Severity, len(m))
	for k, v := range m {
		out[notify.Class(k)] = notify.Severity(v)
	}
	return out
}

// Outcome is the store.Outcome of a run under p: Decide's incident
// transitions and, by Enqueue, one outbox message per notifier target.
// With no notifier configured, incidents are still tracked (for the status
// page and API). newID mints the incidents' and messages' ids.
func (p Plan) Outcome(now time.Time, runID string, newID func() string) store.Outcome {
	return func(before, after store.WorkspaceState, incidents []store.Incident) ([]store.Incident, []store.OutboxMessage) {
		changed, msgs := Decide(now, runID, p.Policy, before, after, incidents, newID)
		out, err := p.Enqueue(now, msgs)
		if err != nil {
			// Enqueue only fails on a payload that cannot be encoded: a bug.
			panic(fmt.Sprintf("driftwatch/incident: enqueue: %v", err))
		}
		return changed, out
	}
}
