package incident

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

var (
	sgIngress = drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update",
		Attributes: []string{"ingress", "tags.owner"}}
	sgTags = drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update",
		Attributes: []string{"tags.owner", "tags_all.owner"}}
	instanceDesc = drift.Finding{Kind: drift.KindDrift, Address: "module.app.aws_instance.web[0]", Type: "aws_instance", Action: "update",
		Attributes: []string{"user_data"}}
	instanceGone = drift.Finding{Kind: drift.KindDrift, Address: "module.app.aws_instance.web[1]", Type: "aws_instance", Action: "delete"}
)

// securityRules are the rules a user writes to page on security groups'
// ingress, never on tags, and to raise errors of this workspace.
var securityRules = []SeverityRule{
	{Name: "tags-only", Severity: notify.SeverityInfo, OnlyAttributes: []string{"tags.*", "tags_all.*"}},
	{Name: "sg-ingress", Severity: notify.SeverityCritical, Types: []string{"aws_security_group*"}, Attributes: []string{"ingress*", "egress*"}},
	{Name: "deleted-in-app", Severity: notify.SeverityHigh, Addresses: []string{"module.app.*"}, Actions: []string{"delete"}},
	{Name: "errors-matter", Severity: notify.SeverityHigh, Classes: []notify.Class{notify.ClassErrored}},
}

func TestSeverityRules(t *testing.T) {
	p := Policy{Rules: securityRules}
	for _, tc := range []struct {
		name     string
		class    notify.Class
		findings []drift.Finding
		sev      notify.Severity
		rule     string
	}{
		{"ingress is critical (the tags beside it do not lower it)", notify.ClassDrift, []drift.Finding{sgIngress}, notify.SeverityCritical, "sg-ingress"},
		{"tag-only change is info", notify.ClassDrift, []drift.Finding{sgTags}, notify.SeverityInfo, "tags-only"},
		{"no rule: the class's severity", notify.ClassDrift, []drift.Finding{instanceDesc}, notify.SeverityModerate, DefaultRule},
		{"the highest finding sets the incident", notify.ClassDrift, []drift.Finding{sgTags, instanceDesc}, notify.SeverityModerate, DefaultRule},
		{"address glob and action", notify.ClassDrift, []drift.Finding{sgTags, instanceGone}, notify.SeverityHigh, "deleted-in-app"},
		{"every finding counts", notify.ClassDrift, []drift.Finding{instanceGone, sgIngress, sgTags}, notify.SeverityCritical, "sg-ingress"},
		{"errored: rules without finding conditions", notify.ClassErrored, nil, notify.SeverityHigh, "errors-matter"},
		{"forbidden: class rules do not leak", notify.ClassForbidden, []drift.Finding{fForbidden}, notify.SeverityHigh, DefaultRule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sev, rule := p.base(tc.class, tc.findings)
			require.Equal(t, tc.sev, sev)
			require.Equal(t, tc.rule, rule)
		})
	}

	// A finding without attributes never matches only_attributes.
	sev, rule := Policy{Rules: securityRules[:1]}.base(notify.ClassDrift, []drift.Finding{fSG})
	require.Equal(t, notify.SeverityModerate, sev)
	require.Equal(t, DefaultRule, rule)
	// The policy's class severity is what no rule matches.
	sev, _ = Policy{Rules: securityRules, Severity: map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityLow}}.
		base(notify.ClassDrift, []drift.Finding{instanceDesc})
	require.Equal(t, notify.SeverityLow, sev)
}

// TestSeverityRulesLifecycle: the rule-set severity is what the messages
// carry and the store keeps, an update re-evaluates it, and a failed
// remediation's raise survives an update.
func TestSeverityRulesLifecycle(t *testing.T) {
	s := newSim(t, Policy{Rules: securityRules})
	_, msgs := s.run(step{findings: []drift.Finding{sgTags}, want: []string{"drift:open"}})
	require.Equal(t, notify.SeverityInfo, msgs[0].Incident.Severity)
	in := s.incident(notify.ClassDrift)
	require.Equal(t, "info", in.Severity)
	require.Equal(t, "tags-only", in.SeverityRule)

	_, msgs = s.run(step{at: time.Hour, findings: []drift.Finding{sgIngress}, want: []string{"drift:update"}})
	require.Equal(t, notify.SeverityCritical, msgs[0].Incident.Severity)
	require.Equal(t, notify.SeverityInfo, msgs[0].PrevSeverity)
	require.Equal(t, "sg-ingress", s.incident(notify.ClassDrift).SeverityRule)

	_, msgs = s.run(step{at: 2 * time.Hour, findings: []drift.Finding{instanceDesc}, want: []string{"drift:update"}})
	require.Equal(t, notify.SeverityModerate, msgs[0].Incident.Severity)
	require.Equal(t, notify.SeverityCritical, msgs[0].PrevSeverity)
	require.Equal(t, DefaultRule, s.incident(notify.ClassDrift).SeverityRule)

	changed, msg := s.remediate(3*time.Hour, notify.Remediation{ID: "r1", Mode: "auto", Result: notify.RemediationFailed})
	require.NotNil(t, changed)
	require.Equal(t, notify.SeverityHigh, msg.Incident.Severity, "a failed remediation raises one step")

	_, msgs = s.run(step{at: 4 * time.Hour, findings: []drift.Finding{sgTags}, want: []string{"drift:update"}})
	require.Equal(t, notify.SeverityLow, msgs[0].Incident.Severity, "the raise is kept on top of the new base (info+1)")
	require.Equal(t, 1, msgs[0].Incident.Escalated)
	require.Equal(t, notify.SeverityHigh, msgs[0].PrevSeverity)
	require.Equal(t, 1, msgs[0].PrevEscalated)

	_, msgs = s.run(step{at: 5 * time.Hour, want: []string{"drift:resolve"}})
	require.Equal(t, notify.SeverityInfo, msgs[0].Incident.Severity, "the resolve drops the raise")
	require.Equal(t, notify.SeverityLow, msgs[0].PrevSeverity)

	e := newSim(t, Policy{Rules: securityRules, ErroredAfter: 1})
	_, msgs = e.run(step{err: "init failed", want: []string{"errored:open"}})
	require.Equal(t, notify.SeverityHigh, msgs[0].Incident.Severity)
	require.Equal(t, "errors-matter", e.incident(notify.ClassErrored).SeverityRule)
}

// TestMinSeverity: a pager route with min_severity high hears of the
// incident only while it is high or above: opened when it gets there,
// resolved when it falls below, silent in between; a route without a
// minimum hears everything as it was.
func TestMinSeverity(t *testing.T) {
	s := newSim(t, Policy{Rules: securityRules})
	targets := []Target{{Notifier: "slack"}, {Notifier: "pager", MinSeverity: notify.SeverityHigh}}
	type got struct {
		notifier string
		event    notify.Event
		delta    bool
	}
	enqueue := func(msgs []notify.Message) []got {
		t.Helper()
		rows, err := Enqueue(t0, msgs, targets)
		require.NoError(t, err)
		var out []got
		for _, r := range rows {
			m := decodePayload(t, r.Payload)
			out = append(out, got{r.Notifier, m.Event, m.Delta != nil})
		}
		return out
	}
	_, msgs := s.run(step{findings: []drift.Finding{sgTags}})
	require.Equal(t, []got{{"slack", notify.EventOpen, false}}, enqueue(msgs), "info: the pager hears nothing")
	_, msgs = s.run(step{at: time.Hour, findings: []drift.Finding{sgIngress}})
	require.Equal(t, []got{{"slack", notify.EventUpdate, true}, {"pager", notify.EventOpen, false}}, enqueue(msgs),
		"critical: the pager's incident opens")
	_, msgs = s.run(step{at: 2 * time.Hour, findings: []drift.Finding{sgIngress, instanceGone}})
	require.Equal(t, []got{{"slack", notify.EventUpdate, true}, {"pager", notify.EventUpdate, true}}, enqueue(msgs))
	_, msgs = s.run(step{at: 3 * time.Hour, findings: []drift.Finding{sgTags}})
	require.Equal(t, []got{{"slack", notify.EventUpdate, true}, {"pager", notify.EventResolve, false}}, enqueue(msgs),
		"back to info: the pager's incident resolves")
	_, msgs = s.run(step{at: 4 * time.Hour})
	require.Equal(t, []got{{"slack", notify.EventResolve, false}}, enqueue(msgs), "the pager's incident is already resolved")

	// A route's severity override is what its minimum compares.
	over := []Target{{Notifier: "pager", MinSeverity: notify.SeverityHigh, Severity: map[notify.Class]notify.Severity{notify.ClassDrift: notify.SeverityCritical}}}
	_, msgs = s.run(step{at: 5 * time.Hour, findings: []drift.Finding{sgTags}})
	rows, err := Enqueue(t0, msgs, over)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, notify.EventOpen, decodePayload(t, rows[0].Payload).Event)
}

func decodePayload(t *testing.T, payload []byte) notify.Message {
	t.Helper()
	var m notify.Message
	require.NoError(t, json.Unmarshal(payload, &m))
	return m
}
