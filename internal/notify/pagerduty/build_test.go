package pagerduty

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

const testKey = "0123456789abcdef0123456789abcdef"

var testOpts = options{routingKey: testKey, severities: DefaultSeverityMap()}

func body(t *testing.T, m notify.Message, o options) string {
	t.Helper()
	ev, err := buildEvent(m, o)
	require.NoError(t, err)
	b, err := encode(ev)
	require.NoError(t, err)
	return string(b)
}

// The parts of SampleMessage's events that do not change between them.
const (
	incidentDetails = `"incident_key": "drift-prod-network-3f9a2c", "workspace": "prod/network", "class": "drift",`
	contextDetails  = `"since": "2026-11-03T09:00:00Z", "run_id": "run-0042", "owner": "network-team", "team": "platform",
		"labels": {"env": "prod", "tier": "core"},
		"status_page": "https://driftwatch.example.com/workspaces/prod%2Fnetwork",
		"counts": {"drift": 1, "pending": 1, "forbidden": 0},
		"findings": [
			{"kind": "drift", "action": "update", "address": "aws_security_group.web", "attributes": ["ingress", "tags.Name"]},
			{"kind": "pending", "action": "create", "address": "aws_s3_bucket.logs"}
		]`
	statusLink = `{"href": "https://driftwatch.example.com/workspaces/prod%2Fnetwork", "text": "driftwatch: prod/network"}`
	clientJSON = `"client": "driftwatch", "client_url": "https://driftwatch.example.com/workspaces/prod%2Fnetwork"`
)

func TestBuildEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    notify.Message
		want string
	}{
		{"open", notifytest.SampleMessage(notify.EventOpen), `{
			"routing_key": "` + testKey + `", "event_action": "trigger", "dedup_key": "drift-prod-network-3f9a2c",
			"payload": {
				"summary": "Terraform drift in prod/network: 1 drifted, 1 pending",
				"source": "prod/network", "severity": "error", "timestamp": "2026-11-03T10:00:00Z",
				"group": "network-team", "class": "drift",
				"custom_details": {"event": "open", ` + incidentDetails + ` "severity": "high", ` + contextDetails + `}
			},
			"links": [` + statusLink + `], ` + clientJSON + `}`},
		{"update", notifytest.SampleMessage(notify.EventUpdate), `{
			"routing_key": "` + testKey + `", "event_action": "trigger", "dedup_key": "drift-prod-network-3f9a2c",
			"payload": {
				"summary": "Terraform drift in prod/network: 1 drifted, 1 pending (findings changed)",
				"source": "prod/network", "severity": "error", "timestamp": "2026-11-03T10:00:00Z",
				"group": "network-team", "class": "drift",
				"custom_details": {"event": "update", ` + incidentDetails + ` "severity": "high", ` + contextDetails + `,
					"changes": {"added": [{"kind": "pending", "action": "create", "address": "aws_s3_bucket.logs"}]}}
			},
			"links": [` + statusLink + `], ` + clientJSON + `}`},
		{"renotify", notifytest.SampleMessage(notify.EventRenotify), `{
			"routing_key": "` + testKey + `", "event_action": "trigger", "dedup_key": "drift-prod-network-3f9a2c",
			"payload": {
				"summary": "Terraform drift in prod/network: 1 drifted, 1 pending (still open since 2026-11-03T09:00:00Z)",
				"source": "prod/network", "severity": "error", "timestamp": "2026-11-03T10:00:00Z",
				"group": "network-team", "class": "drift",
				"custom_details": {"event": "renotify", ` + incidentDetails + ` "severity": "high", ` + contextDetails + `}
			},
			"links": [` + statusLink + `], ` + clientJSON + `}`},
		// A failed apply raised the incident to critical: so is the event.
		{"remediation", notifytest.SampleMessage(notify.EventRemediation), `{
			"routing_key": "` + testKey + `", "event_action": "trigger", "dedup_key": "drift-prod-network-3f9a2c",
			"payload": {
				"summary": "Terraform drift in prod/network: 1 drifted, 1 pending (remediation failed)",
				"source": "prod/network", "severity": "critical", "timestamp": "2026-11-03T10:00:00Z",
				"group": "network-team", "class": "drift",
				"custom_details": {"event": "remediation", ` + incidentDetails + ` "severity": "critical", "escalated": 1, ` + contextDetails + `,
					"remediation": {"id": "rem-0007", "mode": "auto", "result": "failed",
						"reason": "apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)",
						"resources": 1, "apply_run_id": "run-0043", "url": "https://driftwatch.example.com/runs/run-0043"}}
			},
			"links": [` + statusLink + `, {"href": "https://driftwatch.example.com/runs/run-0043", "text": "Remediation run run-0043"}],
			` + clientJSON + `}`},
		{"resolve", notifytest.SampleMessage(notify.EventResolve),
			`{"routing_key": "` + testKey + `", "event_action": "resolve", "dedup_key": "drift-prod-network-3f9a2c"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.JSONEq(t, tc.want, body(t, tc.m, testOpts))
		})
	}
}

func TestBuildEventVariants(t *testing.T) {
	t.Run("source overridden: the workspace is the component", func(t *testing.T) {
		o := testOpts
		o.source = "driftwatch-eu1"
		p := decode(t, body(t, notifytest.SampleMessage(notify.EventOpen), o))["payload"].(map[string]any)
		require.Equal(t, "driftwatch-eu1", p["source"])
		require.Equal(t, "prod/network", p["component"])
	})

	t.Run("severity map", func(t *testing.T) {
		cfg := Config{SeverityMap: map[string]string{"high": "critical"}}
		o := testOpts
		o.severities = severities(cfg)
		for sev, want := range map[notify.Severity]string{
			notify.SeverityCritical: "critical", notify.SeverityHigh: "critical", notify.SeverityModerate: "warning",
			notify.SeverityLow: "warning", notify.SeverityInfo: "info", "unheard-of": "error",
		} {
			m := notifytest.SampleMessage(notify.EventOpen)
			m.Incident.Severity = sev
			p := decode(t, body(t, m, o))["payload"].(map[string]any)
			require.Equal(t, want, p["severity"], "%s", sev)
		}
	})

	t.Run("no status page: no links, no client_url", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.URL = ""
		got := decode(t, body(t, m, testOpts))
		require.NotContains(t, got, "links")
		require.NotContains(t, got, "client_url")
		require.Equal(t, "driftwatch", got["client"])
	})

	t.Run("errored and forbidden summaries", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Class, m.Incident.Error = notify.ClassErrored, "init:\n  backend unreachable"
		p := decode(t, body(t, m, testOpts))["payload"].(map[string]any)
		require.Equal(t, "Drift checks failing for prod/network: init: backend unreachable", p["summary"])
		require.Equal(t, "errored", p["class"])
		require.Equal(t, "init: backend unreachable", p["custom_details"].(map[string]any)["error"])

		m = notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Class, m.Incident.Counts = notify.ClassForbidden, drift.Counts{Forbidden: 2}
		p = decode(t, body(t, m, testOpts))["payload"].(map[string]any)
		require.Equal(t, "Forbidden resource types in prod/network: 2 resources", p["summary"])
	})

	t.Run("awaiting approval", func(t *testing.T) {
		m := notifytest.AwaitingApproval("auto")
		got := decode(t, body(t, m, testOpts))
		p := got["payload"].(map[string]any)
		require.Equal(t, "Terraform drift in prod/network: 1 drifted, 1 pending (remediation awaiting approval)", p["summary"])
		require.Equal(t, map[string]any{"id": "rem-0007", "mode": "auto", "result": "awaiting_approval", "resources": 1.0,
			"expires_at": "2026-11-04T10:00:00Z"}, p["custom_details"].(map[string]any)["remediation"])
		require.Len(t, got["links"], 1, "no run yet: the status page only")
	})
}

// Bounds: the summary within 1024 characters, the top 20 findings with
// the rest counted, 20 paths per finding, and an event within 512 KB.
func TestBuildEventBounds(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventUpdate)
	m.Incident.Workspace = strings.Repeat("w", 2000)
	var fs []drift.Finding
	for i := range 30 {
		f := drift.Finding{Kind: drift.KindDrift, Action: "update", Address: "aws_instance.a" + strings.Repeat("x", i)}
		for j := range 25 {
			f.Attributes = append(f.Attributes, "tags.k"+strings.Repeat("y", j))
		}
		fs = append(fs, f)
	}
	m.Incident.Findings = fs
	m.Delta = &notify.Delta{Added: fs[:15], Changed: fs[15:]}
	got := decode(t, body(t, m, testOpts))
	p := got["payload"].(map[string]any)
	require.Len(t, []rune(p["summary"].(string)), 1024)
	require.True(t, strings.HasSuffix(p["summary"].(string), "…"))
	d := p["custom_details"].(map[string]any)
	require.Len(t, d["findings"], 20)
	require.Equal(t, 10.0, d["findings_omitted"]) //nolint:testifylint // float-compare: a count, decoded from JSON as float64, exact
	f0 := d["findings"].([]any)[0].(map[string]any)
	require.Len(t, f0["attributes"], 20)
	require.Equal(t, 5.0, f0["attributes_omitted"]) //nolint:testifylint // float-compare: a count, decoded from JSON as float64, exact
	c := d["changes"].(map[string]any)
	require.Len(t, c["added"], 15)
	require.Len(t, c["changed"], 5)
	require.Equal(t, 10.0, c["omitted"]) //nolint:testifylint // float-compare: a count, decoded from JSON as float64, exact

	// Over 512 KB: the lists go, the counts stay.
	m = notifytest.SampleMessage(notify.EventOpen)
	m.Incident.Findings = nil
	for i := range 20 {
		f := drift.Finding{Kind: drift.KindDrift, Action: "update", Address: strings.Repeat("a", 1000) + string(rune('a'+i))}
		for range 20 {
			f.Attributes = append(f.Attributes, strings.Repeat("p", 300))
		}
		for range 20 {
			f.SeenIn = append(f.SeenIn, strings.Repeat("s", 1000))
		}
		m.Incident.Findings = append(m.Incident.Findings, f)
	}
	b := body(t, m, testOpts)
	require.LessOrEqual(t, len(b), maxEvent)
	d = decode(t, b)["payload"].(map[string]any)["custom_details"].(map[string]any)
	require.NotContains(t, d, "findings")
	require.Equal(t, 20.0, d["findings_omitted"]) //nolint:testifylint // float-compare: a count, decoded from JSON as float64, exact
	require.Equal(t, map[string]any{"drift": 1.0, "pending": 1.0, "forbidden": 0.0}, d["counts"])
}

func TestBuildEventRefuses(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventOpen)
	m.Incident.Key = strings.Repeat("k", 256)
	_, err := buildEvent(m, testOpts)
	require.ErrorContains(t, err, "cannot be a dedup_key (want 1 to 255 characters)")

	m = notifytest.SampleMessage(notify.EventOpen)
	m.Event = "snooze"
	_, err = buildEvent(m, testOpts)
	require.EqualError(t, err, `unknown event "snooze"`)

	m = notifytest.SampleMessage(notify.EventRemediation)
	m.Remediation = nil
	_, err = buildEvent(m, testOpts)
	require.EqualError(t, err, "message msg-remediation-0001: remediation event without its remediation")
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	s := body(t, m, testOpts)
	for _, p := range notifytest.Provenance {
		require.Contains(t, s, `"provenance":"`+p+`"`)
	}
	require.NotContains(t, body(t, notifytest.SampleMessage(notify.EventOpen), testOpts), "provenance")
}
