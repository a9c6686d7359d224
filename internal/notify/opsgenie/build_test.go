package opsgenie

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/opsgenie/opsgenie-go-sdk-v2/alert"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/genie"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

var since = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

func driftMessage(ev notify.Event) notify.Message {
	fs := []drift.Finding{
		{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress", "tags.Name"}},
		{Kind: drift.KindPending, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "create"},
	}
	return notify.Message{
		ID:    "m1",
		Event: ev,
		Incident: notify.Incident{
			Key: "drift-prod-network", Workspace: "prod/network", Class: notify.ClassDrift,
			Severity: notify.SeverityHigh, Owner: "net", Team: "platform",
			Labels: map[string]string{"tier": "core", "env": "prod"},
			Since:  since, Findings: fs, Counts: drift.CountFindings(fs),
			RunID: "run-7", URL: "https://dw.example.com/w/prod%2Fnetwork",
		},
		At: since.Add(time.Hour),
	}
}

func TestBuildCreate(t *testing.T) {
	t.Run("drift", func(t *testing.T) {
		got := buildCreate(driftMessage(notify.EventOpen), []Responder{{Type: "user", Name: "oncall@example.com"}, {Type: "schedule", Name: "net-rota"}})
		want := &alert.CreateAlertRequest{
			Message: "Terraform drift in prod/network: 1 drifted, 1 pending",
			Alias:   "drift-prod-network",
			Description: "Workspace: prod/network\n" +
				"Class: drift, severity: high\n" +
				"Since: 2026-11-03T09:00:00Z\n" +
				"Run: run-7\n" +
				"Owner: net\n" +
				"Status page: https://dw.example.com/w/prod%2Fnetwork\n" +
				"\n" +
				"Findings (1 drifted, 1 pending, 0 forbidden):\n" +
				"- drift update aws_security_group.web: ingress, tags.Name\n" +
				"- pending create aws_s3_bucket.logs",
			Responders: []alert.Responder{
				{Type: alert.TeamResponder, Name: "platform"},
				{Type: alert.UserResponder, Username: "oncall@example.com"},
				{Type: alert.ScheduleResponder, Name: "net-rota"},
			},
			Tags: []string{"driftwatch", "drift", "prod/network", "env:prod", "tier:core"},
			Details: map[string]string{
				"incident_key": "drift-prod-network", "workspace": "prod/network", "class": "drift",
				"severity": "high", "drift": "1", "pending": "1", "forbidden": "0", "run_id": "run-7",
				"status_page": "https://dw.example.com/w/prod%2Fnetwork", "owner": "net", "team": "platform",
				"since": "2026-11-03T09:00:00Z",
			},
			Entity:   "prod/network",
			Source:   "driftwatch",
			Priority: alert.P2,
		}
		require.Equal(t, want, got)
	})

	t.Run("renotify adds a note", func(t *testing.T) {
		got := buildCreate(driftMessage(notify.EventRenotify), nil)
		require.Equal(t, "Still open since 2026-11-03T09:00:00Z (re-notification, run run-7).", got.Note)
	})

	t.Run("errored", func(t *testing.T) {
		m := notifytest.Errored(driftMessage(notify.EventOpen), notifytest.InitFailed)
		m.Incident.Team, m.Incident.Labels = "", nil
		got := buildCreate(m, nil)
		notifytest.RequireInitFailedAlert(t, got.Message, got.Description, got.Details, len(got.Responders), got.Tags)
	})

	t.Run("forbidden", func(t *testing.T) {
		m := notifytest.Forbidden(driftMessage(notify.EventOpen), drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_manifest.app", Type: "kubernetes_manifest", Action: "no-op", SeenIn: []string{"config", "state"}})
		got := buildCreate(m, nil)
		require.Equal(t, "Forbidden resource types in prod/network: 1 resource", got.Message)
		require.Contains(t, got.Description, "- forbidden no-op kubernetes_manifest.app (seen in config, state)")
	})

	t.Run("limits", func(t *testing.T) {
		m := driftMessage(notify.EventOpen)
		m.Incident.Workspace = strings.Repeat("w", 600)
		m.Incident.Labels = map[string]string{}
		for i := range 30 {
			m.Incident.Labels[fmt.Sprintf("label%02d", i)] = strings.Repeat("v", 60)
		}
		m.Incident.Findings = nil
		for i := range 2000 {
			m.Incident.Findings = append(m.Incident.Findings, drift.Finding{Kind: drift.KindDrift, Address: fmt.Sprintf("aws_instance.web[%d]", i), Action: "update", Attributes: []string{"tags.Owner", "ami"}})
		}
		m.Incident.Counts = drift.CountFindings(m.Incident.Findings)
		got := buildCreate(m, nil)
		notifytest.RequireGenieLimits(t, got.Message, got.Description, got.Entity, got.Tags, got.Details)
	})

	t.Run("one giant address cannot take the description", func(t *testing.T) {
		m := driftMessage(notify.EventOpen)
		m.Incident.Findings = []drift.Finding{{Kind: drift.KindDrift, Address: strings.Repeat("a", 50000), Action: "update"}, {Kind: drift.KindDrift, Address: "b.c", Action: "delete"}}
		got := buildCreate(m, nil)
		require.Contains(t, got.Description, "- drift delete b.c")
		require.LessOrEqual(t, utf8.RuneCountInString(got.Description), genie.MaxDescription)
	})
}

func TestPriority(t *testing.T) {
	for sev, want := range map[notify.Severity]alert.Priority{
		notify.SeverityCritical: alert.P1,
		notify.SeverityHigh:     alert.P2,
		notify.SeverityModerate: alert.P3,
		notify.SeverityLow:      alert.P4,
		notify.SeverityInfo:     alert.P5,
		"":                      alert.P3,
		"bogus":                 alert.P3,
	} {
		t.Run(string(sev), func(t *testing.T) {
			require.Equal(t, want, priority(sev))
			m := driftMessage(notify.EventOpen)
			m.Incident.Severity = sev
			require.Equal(t, want, buildCreate(m, nil).Priority)
			require.Equal(t, &alert.UpdatePriorityRequest{IdentifierType: alert.ALIAS, IdentifierValue: "drift-prod-network", Priority: want}, buildPriority(m))
		})
	}
}

func TestBuildNote(t *testing.T) {
	added := drift.Finding{Kind: drift.KindDrift, Address: "aws_iam_role.ci", Action: "update", Attributes: []string{"assume_role_policy"}}
	removed := drift.Finding{Kind: drift.KindPending, Address: "aws_s3_bucket.logs", Action: "create"}
	changed := drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Action: "replace", Attributes: []string{"ingress"}}
	for _, tc := range []struct {
		name  string
		delta *notify.Delta
		want  string
	}{
		{
			name:  "all sections",
			delta: &notify.Delta{Added: []drift.Finding{added}, Removed: []drift.Finding{removed}, Changed: []drift.Finding{changed}},
			want: "Findings changed in prod/network (run run-7), now 1 drifted, 1 pending, 0 forbidden.\n" +
				"Added:\n+ drift update aws_iam_role.ci: assume_role_policy\n" +
				"Removed:\n- pending create aws_s3_bucket.logs\n" +
				"Changed:\n~ drift replace aws_security_group.web: ingress",
		},
		{
			name:  "removed only",
			delta: &notify.Delta{Removed: []drift.Finding{removed}},
			want: "Findings changed in prod/network (run run-7), now 1 drifted, 1 pending, 0 forbidden.\n" +
				"Removed:\n- pending create aws_s3_bucket.logs",
		},
		{
			name: "no delta",
			want: "Findings changed in prod/network (run run-7), now 1 drifted, 1 pending, 0 forbidden.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := driftMessage(notify.EventUpdate)
			m.Delta = tc.delta
			require.Equal(t, &alert.AddNoteRequest{
				IdentifierType: alert.ALIAS, IdentifierValue: "drift-prod-network", Source: "driftwatch", Note: tc.want,
			}, buildNote(m))
		})
	}

	t.Run("bounded", func(t *testing.T) {
		m := driftMessage(notify.EventUpdate)
		m.Delta = &notify.Delta{}
		for i := range 3000 {
			m.Delta.Added = append(m.Delta.Added, drift.Finding{Kind: drift.KindDrift, Address: fmt.Sprintf("aws_instance.web[%d]", i), Action: "update", Attributes: []string{"tags"}})
		}
		m.Delta.Removed = m.Delta.Added[:10]
		note := buildNote(m).Note
		require.LessOrEqual(t, utf8.RuneCountInString(note), genie.MaxNote)
		require.Regexp(t, `\n… and \d+ more \(see the status page\)$`, note)
		require.NotContains(t, note, "Removed:")
	})
}

func TestBuildClose(t *testing.T) {
	for class, want := range map[notify.Class]string{
		notify.ClassDrift:     "Resolved: prod/network matches its Terraform configuration again (run run-7).",
		notify.ClassForbidden: "Resolved: no forbidden resource types left in prod/network (run run-7).",
		notify.ClassErrored:   "Resolved: drift checks of prod/network succeed again (run run-7).",
	} {
		t.Run(string(class), func(t *testing.T) {
			m := driftMessage(notify.EventResolve)
			m.Incident.Class = class
			require.Equal(t, &alert.CloseAlertRequest{
				IdentifierType: alert.ALIAS, IdentifierValue: "drift-prod-network", Source: "driftwatch", Note: want,
			}, buildClose(m))
		})
	}
}
