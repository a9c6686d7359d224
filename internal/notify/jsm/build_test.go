package jsm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/genie"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// The create body of SampleMessage's incident.
const sampleCreate = `{
	"message": "Terraform drift in prod/network: 1 drifted, 1 pending",
	"alias": "drift-prod-network-3f9a2c",
	"description": "Workspace: prod/network\nClass: drift, severity: high\nSince: 2026-11-03T09:00:00Z\nRun: run-0042\nOwner: network-team\nStatus page: https://driftwatch.example.com/workspaces/prod%2Fnetwork\n\nFindings (1 drifted, 1 pending, 0 forbidden):\n- drift update aws_security_group.web: ingress, tags.Name\n- pending create aws_s3_bucket.logs",
	"responders": [{"type": "team", "name": "platform"}],
	"tags": ["driftwatch", "drift", "prod/network", "env:prod", "tier:core"],
	"details": {
		"incident_key": "drift-prod-network-3f9a2c", "workspace": "prod/network", "class": "drift", "severity": "high",
		"drift": "1", "pending": "1", "forbidden": "0", "run_id": "run-0042",
		"status_page": "https://driftwatch.example.com/workspaces/prod%2Fnetwork",
		"owner": "network-team", "team": "platform", "since": "2026-11-03T09:00:00Z"
	},
	"entity": "prod/network", "source": "driftwatch", "priority": "P2"
}`

const (
	notesPath = "/drift-prod-network-3f9a2c/notes"
	closePath = "/drift-prod-network-3f9a2c/close"
)

type wantRequest struct {
	op, path, query, body string
}

func TestBuildRequests(t *testing.T) {
	for _, tc := range []struct {
		event notify.Event
		want  []wantRequest
	}{
		{notify.EventOpen, []wantRequest{{opCreate, "", "", sampleCreate}}},
		{notify.EventRenotify, []wantRequest{
			{opCreate, "", "", sampleCreate},
			{opNote, notesPath, "identifierType=alias", `{"source": "driftwatch", "note": "Still open since 2026-11-03T09:00:00Z (re-notification, run run-0042)."}`},
		}},
		{notify.EventUpdate, []wantRequest{
			{opNote, notesPath, "identifierType=alias", `{"source": "driftwatch", "note": "Findings changed in prod/network (run run-0042), now 1 drifted, 1 pending, 0 forbidden.\nAdded:\n+ pending create aws_s3_bucket.logs"}`},
		}},
		{notify.EventRemediation, []wantRequest{
			{opNote, notesPath, "identifierType=alias", `{"source": "driftwatch", "note": "Remediation failed (remediation rem-0007, run run-0043).\nReason: apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)\nSeverity raised to critical (P1); the open alert keeps its priority.\nRun: https://driftwatch.example.com/runs/run-0043"}`},
		}},
		{notify.EventResolve, []wantRequest{
			{opClose, closePath, "identifierType=alias", `{"source": "driftwatch", "note": "Resolved: prod/network matches its Terraform configuration again (run run-0042)."}`},
		}},
	} {
		t.Run(string(tc.event), func(t *testing.T) {
			got, err := buildRequests(notifytest.SampleMessage(tc.event))
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				require.Equal(t, w.op, got[i].Op)
				require.Equal(t, w.path, got[i].Path)
				require.Equal(t, w.query, got[i].Query)
				require.JSONEq(t, w.body, string(got[i].Body))
			}
		})
	}
}

func TestBuildRequestsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*notify.Message)
		want string
	}{
		{"alias unusable in a path", func(m *notify.Message) { m.Incident.Key = "drift/prod/network" },
			`incident key "drift/prod/network" cannot be an alias (want [A-Za-z0-9._-], at most 512 characters)`},
		{"unknown event", func(m *notify.Message) { m.Event = "snooze" }, `unknown event "snooze"`},
		{"remediation without its remediation", func(m *notify.Message) { m.Event, m.Remediation = notify.EventRemediation, nil },
			"message msg-open-0001: remediation event without its remediation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := notifytest.SampleMessage(notify.EventOpen)
			tc.edit(&m)
			_, err := buildRequests(m)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestBuildCreateClasses(t *testing.T) {
	t.Run("errored, no team", func(t *testing.T) {
		m := notifytest.Errored(notifytest.SampleMessage(notify.EventOpen), notifytest.InitFailed)
		m.Incident.Team, m.Incident.Labels = "", nil
		got := buildCreate(m)
		notifytest.RequireInitFailedAlert(t, got.Message, got.Description, got.Details, len(got.Responders), got.Tags)
	})
	t.Run("forbidden", func(t *testing.T) {
		m := notifytest.Forbidden(notifytest.SampleMessage(notify.EventOpen), drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_manifest.app", Type: "kubernetes_manifest", Action: "no-op", SeenIn: []string{"config", "state"}})
		got := buildCreate(m)
		require.Equal(t, "Forbidden resource types in prod/network: 1 resource", got.Message)
		require.Contains(t, got.Description, "- forbidden no-op kubernetes_manifest.app (seen in config, state)")
	})
}

func TestPriority(t *testing.T) {
	for sev, want := range map[notify.Severity]string{
		notify.SeverityCritical: "P1", notify.SeverityHigh: "P2", notify.SeverityModerate: "P3",
		notify.SeverityLow: "P4", notify.SeverityInfo: "P5", "": "P3", "bogus": "P3",
	} {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Severity = sev
		require.Equal(t, want, buildCreate(m).Priority, "severity %q", sev)
	}
}

func TestRemediationNotes(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventRemediation)
	for _, tc := range []struct {
		edit func(*notify.Remediation)
		want string
	}{
		{func(r *notify.Remediation) { *r = *notifytest.AwaitingApproval("auto").Remediation }, "Remediation proposed: reverts 1 resource; awaiting approval (driftwatch approve rem-0007) before 2026-11-04T10:00:00Z (remediation rem-0007)."},
		{func(r *notify.Remediation) {
			r.Result, r.Reason, r.ApplyRunID, r.URL = notify.RemediationApproved, "", "", ""
		},
			"Remediation approved (auto): reverting 1 resource now (remediation rem-0007)."},
		{func(r *notify.Remediation) { r.Result, r.Reason = notify.RemediationApplied, "" },
			"Remediation applied: reverted 1 resource; a verification run follows (remediation rem-0007, run run-0043).\nRun: https://driftwatch.example.com/runs/run-0043"},
		{func(r *notify.Remediation) {
			r.Result, r.Reason, r.URL = notify.RemediationVerificationFailed, "1 resource still drifted", ""
		},
			"Remediation verification failed (remediation rem-0007, run run-0043).\nReason: 1 resource still drifted\nSeverity raised to critical (P1); the open alert keeps its priority."},
		{func(r *notify.Remediation) {
			r.Result, r.Reason, r.ApplyRunID, r.URL = notify.RemediationRefused, "plan changed", "", ""
		},
			"Remediation refused (remediation rem-0007).\nReason: plan changed"},
	} {
		mm := m
		r := *m.Remediation
		tc.edit(&r)
		mm.Remediation = &r
		require.Equal(t, tc.want, remediationNote(mm))
	}
}

// Bodies stay within the field limits whatever the incident holds; what
// is cut is counted.
func TestLimits(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventOpen)
	m.Incident.Workspace = strings.Repeat("w", 600)
	m.Incident.Labels = map[string]string{}
	for i := range 30 {
		m.Incident.Labels[fmt.Sprintf("label%02d", i)] = strings.Repeat("v", 60)
	}
	m.Incident.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: strings.Repeat("a", 50000), Action: "update"}}
	for i := range 2000 {
		m.Incident.Findings = append(m.Incident.Findings, drift.Finding{Kind: drift.KindDrift, Address: fmt.Sprintf("aws_instance.web[%d]", i), Action: "update", Attributes: []string{"tags.Owner", "ami"}})
	}
	m.Incident.Counts = drift.CountFindings(m.Incident.Findings)
	got := buildCreate(m)
	notifytest.RequireGenieLimits(t, got.Message, got.Description, got.Entity, got.Tags, got.Details)
	require.Contains(t, got.Description, "- drift update aws_instance.web[0]: tags.Owner, ami", "one giant address does not take the description")

	u := notifytest.SampleMessage(notify.EventUpdate)
	u.Delta = &notify.Delta{Added: m.Incident.Findings, Removed: m.Incident.Findings[:10]}
	note := genie.DeltaNote(u)
	require.LessOrEqual(t, utf8.RuneCountInString(note), genie.MaxNote)
	require.Regexp(t, `\n… and \d+ more \(see the status page\)$`, note)
	require.NotContains(t, note, "Removed:")
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	reqs, err := buildRequests(m)
	require.NoError(t, err)
	var all string
	for _, r := range reqs {
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &body))
		all += body["description"].(string)
	}
	notifytest.RequireProvenance(t, all)
}
