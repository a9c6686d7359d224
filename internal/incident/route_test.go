package incident

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/store"
)

func TestRoutes(t *testing.T) {
	critical := map[notify.Class]notify.Severity{notify.ClassForbidden: notify.SeverityCritical}
	routes := []Route{
		{Match: RouteMatch{Workspaces: []string{"prod-*"}, Labels: map[string]string{"tier": "core"}},
			Notifiers: []string{"opsgenie-core", "slack-core"}, Severity: critical, Team: "core"},
		{Match: RouteMatch{Workspaces: []string{"prod-*", "shared"}}, Notifiers: []string{"slack-prod"}, Continue: true},
		{Match: RouteMatch{Labels: map[string]string{"team": "data"}}, Notifiers: []string{"slack-data", "slack-prod"}, Team: "data"},
		{Match: RouteMatch{Workspaces: []string{"sandbox-*"}}, Team: "sandbox"}, // default notifiers, new team
		{Match: RouteMatch{Workspaces: []string{"[bad"}}, Notifiers: []string{"never"}},
	}
	defaults := []string{"slack-all"}
	tests := []struct {
		name      string
		routes    []Route
		workspace string
		labels    map[string]string
		want      []Target
	}{
		{"no route matches: defaults", routes, "dev-net", nil, []Target{{Notifier: "slack-all"}}},
		{"no routes at all: defaults", nil, "dev-net", nil, []Target{{Notifier: "slack-all"}}},
		{"no routes, no defaults: nothing", nil, "dev-net", nil, nil},
		{"first match wins", routes, "prod-net", map[string]string{"tier": "core", "team": "data"},
			[]Target{{Notifier: "opsgenie-core", Severity: critical, Team: "core"}, {Notifier: "slack-core", Severity: critical, Team: "core"}}},
		{"labels must all match", routes, "prod-net", map[string]string{"tier": "edge"},
			[]Target{{Notifier: "slack-prod"}}},
		{"continue goes on, a notifier is targeted once", routes, "prod-net", map[string]string{"team": "data"},
			[]Target{{Notifier: "slack-prod"}, {Notifier: "slack-data", Team: "data"}}},
		{"exact workspace name", routes, "shared", nil, []Target{{Notifier: "slack-prod"}}},
		{"glob is anchored", routes, "preprod-net", nil, []Target{{Notifier: "slack-all"}}},
		{"label-only route", routes, "dev-warehouse", map[string]string{"team": "data"},
			[]Target{{Notifier: "slack-data", Team: "data"}, {Notifier: "slack-prod", Team: "data"}}},
		{"a route without notifiers uses the defaults", routes, "sandbox-1", nil, []Target{{Notifier: "slack-all", Team: "sandbox"}}},
		{"a malformed glob matches nothing", routes, "[bad", nil, []Target{{Notifier: "slack-all"}}},
		{"an empty match matches everything", []Route{{Notifiers: []string{"x"}}}, "anything", nil, []Target{{Notifier: "x"}}},
		{"only continue routes match: no fallback to defaults", []Route{{Notifiers: []string{"x"}, Continue: true}}, "a", nil,
			[]Target{{Notifier: "x"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := defaults
			if tc.name == "no routes, no defaults: nothing" {
				d = nil
			}
			require.Empty(t, cmp.Diff(tc.want, Routes(tc.routes, d, tc.workspace, tc.labels)))
		})
	}
}

func TestRoutesDoNotAlias(t *testing.T) {
	sev := map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityHigh}
	got := Routes([]Route{{Notifiers: []string{"a"}, Severity: sev}}, nil, "ws", nil)
	got[0].Severity[notify.ClassDrift] = notify.SeverityInfo
	require.Equal(t, notify.SeverityHigh, sev[notify.ClassDrift])
}

func TestEnqueue(t *testing.T) {
	s := newSim(t, Policy{Team: "net-oncall"})
	_, msgs := s.run(step{findings: []drift.Finding{fBucket, fForbidden}})
	require.Len(t, msgs, 2)
	targets := []Target{
		{Notifier: "opsgenie", Severity: map[notify.Class]notify.Severity{notify.ClassForbidden: notify.SeverityCritical}, Team: "platform"},
		{Notifier: "slack"},
	}
	at := t0.Add(5)
	rows, err := Enqueue(at, msgs, targets)
	require.NoError(t, err)
	require.Len(t, rows, 4)

	type row struct {
		ID, Notifier, Key string
		Severity          notify.Severity
		Team              string
	}
	var got []row
	for _, r := range rows {
		var m notify.Message
		require.NoError(t, json.Unmarshal(r.Payload, &m))
		require.Equal(t, at, r.CreatedAt)
		require.Equal(t, at, r.NextAttempt)
		require.Zero(t, r.Attempts)
		require.Equal(t, m.Incident.Key, r.IncidentKey)
		got = append(got, row{r.ID, r.Notifier, r.IncidentKey, m.Incident.Severity, m.Incident.Team})
	}
	fk, dk := Key("net", notify.ClassForbidden), Key("net", notify.ClassDrift)
	require.Equal(t, []row{
		{"msg-1/opsgenie", "opsgenie", fk, notify.SeverityCritical, "platform"},
		{"msg-1/slack", "slack", fk, notify.SeverityHigh, "net-oncall"},
		{"msg-2/opsgenie", "opsgenie", dk, notify.SeverityModerate, "platform"},
		{"msg-2/slack", "slack", dk, notify.SeverityModerate, "net-oncall"},
	}, got)
	require.Equal(t, notify.SeverityHigh, msgs[0].Incident.Severity, "the input message is not modified")

	// The payload round-trips: what the outbox decodes is what Decide made.
	var m notify.Message
	require.NoError(t, json.Unmarshal(rows[3].Payload, &m))
	require.Empty(t, cmp.Diff(msgs[1], m))

	rows, err = Enqueue(at, msgs, nil)
	require.NoError(t, err)
	require.Empty(t, rows)
	var none []store.OutboxMessage
	rows, err = Enqueue(at, nil, targets)
	require.NoError(t, err)
	require.Len(t, rows, len(none))
}
