package gitlab

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// The parts of SampleMessage's descriptions that do not change between
// events.
const (
	descMarker  = "<!-- driftwatch:incident=drift-prod-network-3f9a2c -->\n"
	descContext = "| Workspace | Class | Owner | Incident key |\n|---|---|---|---|\n" +
		"| `prod/network` | drift | `network-team` | `drift-prod-network-3f9a2c` |\n\n"
	descFindings = "| Kind | Action | Address | Attributes |\n|---|---|---|---|\n" +
		"| drift | `update` | `aws_security_group.web` | `ingress`, `tags.Name` |\n" +
		"| pending | `create` | `aws_s3_bucket.logs` |  |\n\n"
	descFooter = "_driftwatch keeps this issue current: it rewrites this description and comments on every change, " +
		"closes the issue when the incident resolves and reopens it if the same drift comes back. " +
		"Findings list addresses and attribute paths, never values._\n"
	statusLink = "[status page](https://driftwatch.example.com/workspaces/prod%2Fnetwork)"
	noteLink   = "[Status page](https://driftwatch.example.com/workspaces/prod%2Fnetwork)"
)

func TestBuildDescription(t *testing.T) {
	open := descMarker +
		"**Open** since 2026-11-03 09:00 UTC (1h) · severity **high** · last run `run-0042` · " + statusLink + "\n\n" +
		descContext + "### Findings: 1 drifted, 1 pending\n\n" + descFindings + descFooter
	for _, tc := range []struct {
		ev   notify.Event
		want string
	}{
		{notify.EventOpen, open + "\n_Last update: 2026-11-03 10:00 UTC (open)._\n"},
		{notify.EventUpdate, open + "\n_Last update: 2026-11-03 10:00 UTC (update)._\n"},
		{notify.EventRenotify, open + "\n_Last update: 2026-11-03 10:00 UTC (renotify)._\n"},
		// A failed apply raised the severity: the description says so.
		{notify.EventRemediation, descMarker +
			"**Open** since 2026-11-03 09:00 UTC (1h) · severity **critical** (raised 1 step by failed remediations) · last run `run-0042` · " + statusLink + "\n\n" +
			descContext + "### Findings: 1 drifted, 1 pending\n\n" + descFindings + descFooter +
			"\n_Last update: 2026-11-03 10:00 UTC (remediation)._\n"},
		// The resolve message lists what was last notified: what resolved.
		{notify.EventResolve, descMarker +
			"**Resolved** at 2026-11-03 10:00 UTC, open since 2026-11-03 09:00 UTC (1h) · last run `run-0042` · " + statusLink + "\n\n" +
			descContext + "### Resolved findings (as last notified): 1 drifted, 1 pending\n\n" + descFindings + descFooter +
			"\n_Last update: 2026-11-03 10:00 UTC (resolve)._\n"},
	} {
		t.Run(string(tc.ev), func(t *testing.T) {
			require.Equal(t, tc.want, buildDescription(notifytest.SampleMessage(tc.ev)))
		})
	}

	t.Run("errored, no owner, no status page", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Class, m.Incident.Key = notify.ClassErrored, "dw-errored-prod-network-0a1b2c"
		m.Incident.Error, m.Incident.Owner, m.Incident.URL = "init:\n  backend `s3` unreachable | retry", "", ""
		m.Incident.Findings, m.Incident.Counts = nil, drift.Counts{}
		require.Equal(t, "<!-- driftwatch:incident=dw-errored-prod-network-0a1b2c -->\n"+
			"**Open** since 2026-11-03 09:00 UTC (1h) · severity **high** · last run `run-0042`\n\n"+
			"| Workspace | Class | Owner | Incident key |\n|---|---|---|---|\n"+
			"| `prod/network` | errored | - | `dw-errored-prod-network-0a1b2c` |\n\n"+
			"**Error:** ``init: backend `s3` unreachable | retry``\n\n"+
			"### Findings: no findings\n\nNo findings listed.\n\n"+descFooter+
			"\n_Last update: 2026-11-03 10:00 UTC (open)._\n", buildDescription(m))
		require.Equal(t, "Drift checks failing for prod/network", issueTitle(m.Incident))
	})

	t.Run("findings beyond the table's bound are counted", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Findings = nil
		for i := range maxFindings + 3 {
			m.Incident.Findings = append(m.Incident.Findings, drift.Finding{Kind: drift.KindDrift, Action: "update", Address: "null_resource.n" + string(rune('a'+i%26))})
		}
		d := buildDescription(m)
		require.Equal(t, maxFindings, strings.Count(d, "| drift | `update` | `null_resource.n"))
		require.Contains(t, d, "|\n\n_… and 3 more findings: see the status page._\n")
	})

	t.Run("attribute paths beyond the bound are counted", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		f := drift.Finding{Kind: drift.KindDrift, Action: "update", Address: "aws_iam_policy.p"}
		for range maxPaths + 2 {
			f.Attributes = append(f.Attributes, "statement")
		}
		m.Incident.Findings = []drift.Finding{f}
		require.Contains(t, buildDescription(m), "| drift | `update` | `aws_iam_policy.p` | "+strings.Repeat("`statement`, ", maxPaths)+"and 2 more |\n")
	})
}

func TestIssueTitle(t *testing.T) {
	in := notifytest.SampleMessage(notify.EventOpen).Incident
	require.Equal(t, "Terraform drift in prod/network", issueTitle(in), "stable: the counts are in the description")
	in.Class = notify.ClassForbidden
	require.Equal(t, "Forbidden resource types in prod/network", issueTitle(in))
	in.Workspace = strings.Repeat("w", 300)
	require.Len(t, []rune(issueTitle(in)), maxTitle)
}

func TestBuildNote(t *testing.T) {
	for _, tc := range []struct {
		name     string
		m        notify.Message
		reopened bool
		want     string
	}{
		{"open", notifytest.SampleMessage(notify.EventOpen), false, ""},
		{"reopen", notifytest.SampleMessage(notify.EventOpen), true,
			"**Open again** since 2026-11-03 09:00 UTC: 1 drifted, 1 pending (run `run-0042`). Reopening this issue. " + noteLink +
				"\n\n<!-- driftwatch:message=msg-open-0001 -->"},
		{"update", notifytest.SampleMessage(notify.EventUpdate), false,
			"**Findings changed** (run `run-0042`): 1 added. Now 1 drifted, 1 pending. " + noteLink + "\n\n" +
				"| Change | Kind | Action | Address | Attributes |\n|---|---|---|---|---|\n" +
				"| added | pending | `create` | `aws_s3_bucket.logs` |  |" +
				"\n\n<!-- driftwatch:message=msg-update-0001 -->"},
		{"renotify", notifytest.SampleMessage(notify.EventRenotify), false,
			"**Still open** since 2026-11-03 09:00 UTC (1h): 1 drifted, 1 pending (run `run-0042`). " + noteLink +
				"\n\n<!-- driftwatch:message=msg-renotify-0001 -->"},
		{"remediation failed", notifytest.SampleMessage(notify.EventRemediation), false,
			"**Remediation failed**: `rem-0007` (mode `auto`, reverts 1 resource, apply run `run-0043`). " +
				"Reason: `apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)`. Severity raised to **critical**. " +
				"[Apply run](https://driftwatch.example.com/runs/run-0043) " + noteLink +
				"\n\n<!-- driftwatch:message=msg-remediation-0001 -->"},
		{"remediation awaiting approval", func() notify.Message {
			m := notifytest.AwaitingApproval("approve")
			m.Incident.URL = ""
			return m
		}(), false,
			"**Remediation awaiting approval**: `rem-0007` (mode `approve`, reverts 1 resource). " +
				"Approve with `driftwatch approve rem-0007` before 2026-11-04 10:00 UTC." +
				"\n\n<!-- driftwatch:message=msg-remediation-0001 -->"},
		{"resolve", notifytest.SampleMessage(notify.EventResolve), false,
			"**Resolved** (run `run-0042`); open since 2026-11-03 09:00 UTC (1h). Closing this issue; driftwatch reopens it if the same drift comes back. " +
				noteLink + "\n\n<!-- driftwatch:message=msg-resolve-0001 -->"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, buildNote(tc.m, tc.reopened))
		})
	}
}

// Text from plans, workspaces and errors is shown as code: no mention,
// reference or HTML is rendered, and a pipe cannot break a table.
func TestCodeSpans(t *testing.T) {
	for in, want := range map[string]string{
		"aws_instance.web":           "`aws_instance.web`",
		"@platform-oncall #12 !3 ~x": "`@platform-oncall #12 !3 ~x`",
		"a`b":                        "``a`b``",
		"`edge`":                     "`` `edge` ``",
		"<img src=x>":                "`<img src=x>`",
		"two\nlines":                 "`two lines`",
		"":                           "",
	} {
		require.Equal(t, want, code(in, 100), "%q", in)
	}
	require.Equal(t, "`module.a[\"x\\|y\"]`", cell(`module.a["x|y"]`))
	require.Equal(t, "`"+strings.Repeat("a", 9)+"…`", code(strings.Repeat("a", 20), 10))
}

func TestLinkURL(t *testing.T) {
	require.Equal(t, "https://dw.example.com/w/prod%2Fnet", linkURL("https://dw.example.com/w/prod%2Fnet"))
	require.Equal(t, "https://dw.example.com/w/%28x%29", linkURL("https://dw.example.com/w/(x)"))
	require.Empty(t, linkURL("javascript:alert(1)"))
	require.Empty(t, linkURL("https://dw.example.com/a b"))
	require.Empty(t, linkURL(""))
}

func TestMarkers(t *testing.T) {
	require.Equal(t, "<!-- driftwatch:incident=dw-drift-prod-3f9a2c0b1d2e -->", incidentMarker("dw-drift-prod-3f9a2c0b1d2e"))
	require.Equal(t, "<!-- driftwatch:message=01JD3ZK9Q7 -->", messageMarker("01JD3ZK9Q7"))
	// An ID that could end the comment early is hashed.
	m := messageMarker("x -- > y")
	require.Regexp(t, `^<!-- driftwatch:message=sha256-[0-9a-f]{32} -->$`, m)
	require.Equal(t, m, messageMarker("x -- > y"), "stable")
}

func TestCheckMessage(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventOpen)
	require.NoError(t, checkMessage(m))
	for _, tc := range []struct {
		edit func(*notify.Message)
		want string
	}{
		{func(m *notify.Message) { m.Event = "snooze" }, `unknown event "snooze"`},
		{func(m *notify.Message) { m.Event, m.Remediation = notify.EventRemediation, nil }, "message msg-open-0001: remediation event without its remediation"},
		{func(m *notify.Message) { m.Incident.Key = "a--b" }, `incident key "a--b" cannot be an issue marker (want [a-z0-9-], at most 200 characters)`},
		{func(m *notify.Message) { m.Incident.Key = "" }, `incident key "" cannot be an issue marker (want [a-z0-9-], at most 200 characters)`},
	} {
		c := notifytest.SampleMessage(notify.EventOpen)
		tc.edit(&c)
		require.EqualError(t, checkMessage(c), tc.want)
	}
}

func TestOpenFor(t *testing.T) {
	t0 := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "0m", 45 * time.Minute: "45m", 3*time.Hour + 5*time.Minute: "3h 5m", 2 * time.Hour: "2h",
		50*time.Hour + 10*time.Minute: "2d 2h", 48 * time.Hour: "2d",
	} {
		require.Equal(t, want, openFor(t0, t0.Add(d)), "%s", d)
	}
	require.Empty(t, openFor(t0, t0.Add(-time.Minute)))
	require.Empty(t, openFor(time.Time{}, t0))
}

func TestIssueLabels(t *testing.T) {
	require.Equal(t, []string{"driftwatch", "driftwatch::forbidden"}, issueLabels(DefaultLabels(), notify.ClassForbidden))
	require.Equal(t, []string{"driftwatch::drift"}, issueLabels([]string{}, notify.ClassDrift))
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	var s string
	for _, f := range m.Incident.Findings {
		s += findingRow(f) + "\n"
	}
	notifytest.RequireProvenance(t, s)
}
