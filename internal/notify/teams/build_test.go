package teams

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func body(t *testing.T, m notify.Message) string {
	t.Helper()
	b, err := encode(m)
	require.NoError(t, err)
	return string(b)
}

// envelope is the Workflows message around a card's body and actions.
func envelope(body, actions string) string {
	s := `{"type": "message", "attachments": [{
		"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null,
		"content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
			"msteams": {"width": "Full"}, "body": [` + body + `]`
	if actions != "" {
		s += `, "actions": [` + actions + `]`
	}
	return s + `}}]}`
}

func head(label, style, color string) string {
	return `{"type": "Container", "style": "` + style + `", "bleed": true, "items": [
		{"type": "TextBlock", "text": "` + label + `", "size": "Small", "weight": "Bolder", "color": "` + color + `", "wrap": true},
		{"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": "Terraform drift in prod/network: 1 drifted, 1 pending", "size": "Large", "weight": "Bolder"}]}]}`
}

func facts(severity, status, findings string) string {
	return `{"type": "FactSet", "facts": [
		{"title": "Severity", "value": "` + severity + `"}, {"title": "Workspace", "value": "prod/network"},
		{"title": "Class", "value": "drift"}, {"title": "Owner", "value": "network-team"},
		{"title": "Since", "value": "2026-11-03 09:00 UTC"}, {"title": "Status", "value": "` + status + `"},
		` + findings + `, {"title": "Run", "value": "run-0042"}]}`
}

func headingJSON(s string) string {
	return `{"type": "TextBlock", "text": "` + s + `", "weight": "Bolder", "wrap": true, "spacing": "Medium", "separator": true}`
}

// The two findings of SampleMessage: addresses in monospace text runs,
// attribute paths after them, never a value.
const (
	sgLine     = `{"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": "update ", "weight": "Bolder"}, {"type": "TextRun", "text": "aws_security_group.web", "fontType": "Monospace"}, {"type": "TextRun", "text": " · ingress, tags.Name", "isSubtle": true}]}`
	bucketRuns = `{"type": "TextRun", "text": "pending create ", "weight": "Bolder"}, {"type": "TextRun", "text": "aws_s3_bucket.logs", "fontType": "Monospace"}`
	statusLink = `{"type": "Action.OpenUrl", "title": "Open in driftwatch", "url": "https://driftwatch.example.com/workspaces/prod%2Fnetwork"}`
)

var findingsJSON = headingJSON("Findings") + `, ` + sgLine + `, {"type": "RichTextBlock", "inlines": [` + bucketRuns + `]}`

func TestBuildCard(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    notify.Message
		want string
	}{
		{"open", notifytest.SampleMessage(notify.EventOpen), envelope(
			head("HIGH · New incident", "attention", "Attention")+`, `+
				facts("high", "Open for 1h", `{"title": "Findings", "value": "1 drifted, 1 pending"}`)+`, `+findingsJSON,
			statusLink)},
		{"update: what changed, then the findings", notifytest.SampleMessage(notify.EventUpdate), envelope(
			head("HIGH · Findings changed", "attention", "Attention")+`, `+
				facts("high", "Open for 1h", `{"title": "Findings", "value": "1 drifted, 1 pending"}`)+`, `+
				headingJSON("What changed")+`, {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": "Added ", "weight": "Bolder"}, `+bucketRuns+`]}, `+
				findingsJSON,
			statusLink)},
		{"renotify", notifytest.SampleMessage(notify.EventRenotify), envelope(
			head("HIGH · Still open", "attention", "Attention")+`, `+
				facts("high", "Open for 1h", `{"title": "Findings", "value": "1 drifted, 1 pending"}`)+`, `+findingsJSON,
			statusLink)},
		// A failed apply raised the incident to critical: the card says so,
		// and what became of the remediation, and links its run.
		{"remediation", notifytest.SampleMessage(notify.EventRemediation), envelope(
			head("CRITICAL · Remediation failed", "attention", "Attention")+`, `+
				facts("critical (raised 1 step by failed remediations)", "Open for 1h", `{"title": "Findings", "value": "1 drifted, 1 pending"}`)+`, `+
				headingJSON("Remediation")+`, {"type": "FactSet", "facts": [
					{"title": "ID", "value": "rem-0007"}, {"title": "Result", "value": "failed"}, {"title": "Mode", "value": "auto"},
					{"title": "Resources", "value": "1 resource"},
					{"title": "Reason", "value": "apply: Error: Cannot write file (aws\\_security\\_group.web, main.tf line 3)"},
					{"title": "Apply run", "value": "run-0043"}]}, `+findingsJSON,
			statusLink+`, {"type": "Action.OpenUrl", "title": "Open remediation run", "url": "https://driftwatch.example.com/runs/run-0043"}`)},
		// Resolved: green, how long it was open, the last counts, no list.
		{"resolve", notifytest.SampleMessage(notify.EventResolve), envelope(
			head("Resolved", "good", "Good")+`, `+
				facts("high", "Resolved after 1h", `{"title": "Last findings", "value": "1 drifted, 1 pending"}`),
			statusLink)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.JSONEq(t, tc.want, body(t, tc.m))
		})
	}
}

func TestBuildCardVariants(t *testing.T) {
	t.Run("no status page: no action", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.URL = ""
		c := content(t, body(t, m))
		require.NotContains(t, c, "actions")
	})

	t.Run("severity colours", func(t *testing.T) {
		for sev, want := range map[notify.Severity]string{
			notify.SeverityCritical: "attention", notify.SeverityHigh: "attention", notify.SeverityModerate: "warning",
			notify.SeverityLow: "warning", notify.SeverityInfo: "accent", "unheard-of": "attention",
		} {
			m := notifytest.SampleMessage(notify.EventOpen)
			m.Incident.Severity = sev
			require.Equal(t, want, headOf(t, m)["style"], "%s", sev)
		}
	})

	t.Run("errored: the error, no counts, Markdown escaped", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Class, m.Incident.Error = notify.ClassErrored, "init:\n  backend *unreachable* for [team_a]"
		m.Incident.Findings, m.Incident.Counts = nil, drift.Counts{}
		c := content(t, body(t, m))
		require.JSONEq(t, `{"type": "FactSet", "facts": [
			{"title": "Severity", "value": "high"}, {"title": "Workspace", "value": "prod/network"},
			{"title": "Class", "value": "errored"}, {"title": "Owner", "value": "network-team"},
			{"title": "Since", "value": "2026-11-03 09:00 UTC"}, {"title": "Status", "value": "Open for 1h"},
			{"title": "Run", "value": "run-0042"},
			{"title": "Error", "value": "init: backend \\*unreachable\\* for \\[team\\_a\\]"}]}`, notifytest.MustJSON(t, c["body"].([]any)[1]))
		require.Len(t, c["body"], 2, "no findings: no list")
		title := c["body"].([]any)[0].(map[string]any)["items"].([]any)[1].(map[string]any)["inlines"].([]any)[0].(map[string]any)["text"]
		require.Equal(t, "Drift checks failing for prod/network: init: backend *unreachable* for [team_a]", title, "text runs are shown as they are")
	})

	t.Run("forbidden", func(t *testing.T) {
		m := notifytest.Forbidden(notifytest.SampleMessage(notify.EventOpen), drift.Finding{Kind: drift.KindForbidden, Address: "kubernetes_deployment.api", Action: "create", SeenIn: []string{"config", "plan"}})
		c := content(t, body(t, m))
		b := c["body"].([]any)
		require.Contains(t, notifytest.MustJSON(t, b[1]), `{"title":"Findings","value":"1 forbidden"}`)
		require.JSONEq(t, `{"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": "forbidden create ", "weight": "Bolder"},
			{"type": "TextRun", "text": "kubernetes_deployment.api", "fontType": "Monospace"},
			{"type": "TextRun", "text": " · seen in config, plan", "isSubtle": true}]}`, notifytest.MustJSON(t, b[3]))
	})

	t.Run("awaiting approval: the command, the expiry, no run", func(t *testing.T) {
		m := notifytest.AwaitingApproval("approve")
		c := content(t, body(t, m))
		b := c["body"].([]any)
		require.Equal(t, "HIGH · Remediation awaiting approval", headOf(t, m)["items"].([]any)[0].(map[string]any)["text"])
		require.JSONEq(t, `{"type": "FactSet", "facts": [{"title": "ID", "value": "rem-0007"}, {"title": "Result", "value": "awaiting\\_approval"},
			{"title": "Mode", "value": "approve"}, {"title": "Resources", "value": "1 resource"}, {"title": "Expires", "value": "2026-11-04 10:00 UTC"}]}`, notifytest.MustJSON(t, b[3]))
		require.JSONEq(t, `{"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": "Approve with "},
			{"type": "TextRun", "text": "driftwatch approve rem-0007", "fontType": "Monospace"}]}`, notifytest.MustJSON(t, b[4]))
		require.Len(t, c["actions"], 1, "no run yet: the status page only")
	})

	t.Run("applied remediation is green", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventRemediation)
		m.Remediation.Result = notify.RemediationApplied
		require.Equal(t, "good", headOf(t, m)["style"])
	})
}

// Hundreds of findings with long addresses and many paths: the card stays
// within Teams' limit, lists what fits and counts the rest.
func TestBuildCardBounds(t *testing.T) {
	var fs []drift.Finding
	for i := range 400 {
		f := drift.Finding{Kind: drift.KindDrift, Action: "update",
			Address: fmt.Sprintf("module.platform[\"eu-west-1\"].module.cluster_%03d.aws_security_group.%s", i, strings.Repeat("very_long_name_", 40))}
		for j := range 25 {
			f.Attributes = append(f.Attributes, fmt.Sprintf("ingress[%d].cidr_blocks", j))
		}
		fs = append(fs, f)
	}
	for _, ev := range []notify.Event{notify.EventOpen, notify.EventUpdate} {
		t.Run(string(ev), func(t *testing.T) {
			m := notifytest.SampleMessage(ev)
			m.Incident.Findings, m.Incident.Counts = fs, drift.CountFindings(fs)
			m.Incident.Workspace = strings.Repeat("w", 2000)
			if ev == notify.EventUpdate {
				m.Delta = &notify.Delta{Added: fs[:150], Changed: fs[150:200]}
			}
			b := body(t, m)
			require.LessOrEqual(t, len(b), maxPayload)
			require.Less(t, len(b), notifytest.TeamsMaxMessage)

			items := content(t, b)["body"].([]any)
			var lines, delta int
			var texts []string
			inFindings := false
			for _, it := range items {
				e := it.(map[string]any)
				if e["type"] == "TextBlock" {
					texts = append(texts, e["text"].(string))
					inFindings = strings.HasPrefix(e["text"].(string), "Findings")
					continue
				}
				if e["type"] != "RichTextBlock" {
					continue
				}
				runs := e["inlines"].([]any)
				if inFindings {
					lines++
					addr := runs[1].(map[string]any)["text"].(string)
					require.LessOrEqual(t, len([]rune(addr)), maxAddress)
					require.True(t, strings.HasSuffix(addr, "…"))
					require.Equal(t, " · ingress[0].cidr_blocks, ingress[1].cidr_blocks, ingress[2].cidr_blocks, ingress[3].cidr_blocks, ingress[4].cidr_blocks, ingress[5].cidr_blocks, ingress[6].cidr_blocks, ingress[7].cidr_blocks, ingress[8].cidr_blocks, ingress[9].cidr_blocks, +15 more",
						runs[2].(map[string]any)["text"])
				} else if len(runs) == 4 {
					delta++
				}
			}
			require.Positive(t, lines)
			require.Contains(t, texts, fmt.Sprintf("Findings (top %d of 400)", lines))
			require.Contains(t, texts, fmt.Sprintf("…and %d more findings (see the status page)", 400-lines))
			if ev == notify.EventUpdate {
				// The longer list is cut first: both keep lines.
				require.Positive(t, delta)
				require.InDelta(t, delta, lines, 1)
				require.Contains(t, texts, fmt.Sprintf("…and %d more changes (see the status page)", 200-delta))
			}
		})
	}
}

// When not even one line fits, the list says how many it left out.
func TestBuildCardNothingListed(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventUpdate)
	c, err := buildCard(m)
	require.NoError(t, err)
	got := buildLists(m).body(c, 0, 0)
	var texts []string
	for _, e := range got.Body {
		require.NotEqual(t, "RichTextBlock", e.Type)
		if e.Type == "TextBlock" {
			texts = append(texts, e.Text)
		}
	}
	require.Equal(t, []string{"What changed", "1 change not listed (see the status page)", "Findings", "2 findings not listed (see the status page)"}, texts)
}

func TestBuildCardRefuses(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventOpen)
	m.Event = "snooze"
	_, err := encode(m)
	require.EqualError(t, err, `unknown event "snooze"`)

	m = notifytest.SampleMessage(notify.EventRemediation)
	m.Remediation = nil
	_, err = encode(m)
	require.EqualError(t, err, "message msg-remediation-0001: remediation event without its remediation")
}

func content(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m["attachments"].([]any)[0].(map[string]any)["content"].(map[string]any)
}

func headOf(t *testing.T, m notify.Message) map[string]any {
	t.Helper()
	return content(t, body(t, m))["body"].([]any)[0].(map[string]any)
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	s := body(t, m)
	notifytest.RequireProvenance(t, s)
}
