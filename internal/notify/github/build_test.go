package github

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// sampleBody is SampleMessage's description with its status line,
// severity line and footer filled in.
func sampleBody(status, severity, footer string) string {
	return `<!-- driftwatch:incident=drift-prod-network-3f9a2c -->
### Terraform drift in ` + "`prod/network`" + `: 1 drifted, 1 pending

- **Status:** ` + status + `
- **Severity:** ` + severity + `
- **Workspace:** ` + "`prod/network` (class `drift`)" + `
- **Owner:** ` + "`network-team`" + ` · **Team:** ` + "`platform`" + `
- **Labels:** ` + "`env=prod`, `tier=core`" + `
- **Last run:** ` + "`run-0042`" + ` · [Status page](https://driftwatch.example.com/workspaces/prod%2Fnetwork)

#### Findings (1 drifted, 1 pending)

| Kind | Action | Address | Attribute paths |
| --- | --- | --- | --- |
| ` + "`drift` | `update` | `aws_security_group.web` | `ingress`, `tags.Name`" + ` |
| ` + "`pending` | `create` | `aws_s3_bucket.logs`" + ` |  |

_driftwatch rewrites this description on every change (last: 2026-11-03 10:00 UTC, ` + footer + `). Comment below rather than edit it. Attribute values are never shown here._
`
}

const statusLine = "\n[Status page](https://driftwatch.example.com/workspaces/prod%2Fnetwork)\n"

func TestBuild(t *testing.T) {
	open := "open since 2026-11-03 09:00 UTC"
	for _, tc := range []struct {
		event   notify.Event
		body    string
		comment string // "": none
	}{
		{notify.EventOpen, sampleBody(open, "high", "opened"), ""},
		{notify.EventUpdate, sampleBody(open, "high", "findings changed"),
			"**Findings changed** in run `run-0042`: 1 added, 0 removed, 0 changed. Now 1 drifted, 1 pending.\n" +
				"\n- added: pending create `aws_s3_bucket.logs`\n" + statusLine +
				"\n<!-- driftwatch:message=msg-update-0001 -->\n"},
		// A failed apply raised the incident's severity one step.
		{notify.EventRemediation, sampleBody(open, "critical (raised 1 step by failed remediations)", "remediation failed"),
			"**Remediation failed**: `rem-0007` (mode auto, 1 resource), apply run [`run-0043`](https://driftwatch.example.com/runs/run-0043).\n" +
				"\nReason: `apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)`\n" +
				"\nSeverity raised to **critical**.\n" + statusLine +
				"\n<!-- driftwatch:message=msg-remediation-0001 -->\n"},
		{notify.EventRenotify, sampleBody(open, "high", "still open"),
			"**Still open** since 2026-11-03 09:00 UTC, last run `run-0042`: 1 drifted, 1 pending.\n" + statusLine +
				"\n<!-- driftwatch:message=msg-renotify-0001 -->\n"},
		{notify.EventResolve, sampleBody("resolved at 2026-11-03 10:00 UTC, open since 2026-11-03 09:00 UTC", "high", "resolved"),
			"**Resolved** at 2026-11-03 10:00 UTC by run `run-0042`; open since 2026-11-03 09:00 UTC. driftwatch reopens this issue if the same drift comes back.\n" +
				statusLine + "\n<!-- driftwatch:message=msg-resolve-0001 -->\n"},
	} {
		t.Run(string(tc.event), func(t *testing.T) {
			m := notifytest.SampleMessage(tc.event)
			require.NoError(t, checkMessage(m))
			require.Equal(t, "Terraform drift in prod/network: 1 drifted, 1 pending", buildTitle(m))
			require.Equal(t, tc.body, buildBody(m))
			c, ok := buildComment(m)
			require.Equal(t, tc.comment != "", ok)
			require.Equal(t, tc.comment, c)
			if ok {
				require.True(t, hasMessageMarker(c, m.ID))
				require.False(t, hasMessageMarker(c, m.ID+"0"))
			}
			require.True(t, hasIncidentMarker(buildBody(m), m.Incident.Key))
			require.False(t, hasIncidentMarker(buildBody(m), "drift-prod-network"), "a key that is a prefix of another is not it")
		})
	}
}

func TestBuildVariants(t *testing.T) {
	t.Run("errored: the error in a code block, no findings table", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.Class, m.Incident.Findings, m.Incident.Counts = notify.ClassErrored, nil, drift.Counts{}
		m.Incident.Error = "init: backend unreachable\n```injected``` @security-team"
		m.Incident.URL, m.Incident.Owner, m.Incident.Team, m.Incident.Labels = "", "", "", nil
		require.Equal(t, "Drift checks failing for prod/network: init: backend unreachable ```injected``` @security-team", buildTitle(m))
		require.Equal(t, `<!-- driftwatch:incident=drift-prod-network-3f9a2c -->
### Drift checks failing for `+"`prod/network`"+`

- **Status:** open since 2026-11-03 09:00 UTC
- **Severity:** high
- **Workspace:** `+"`prod/network` (class `errored`)"+`
- **Last run:** `+"`run-0042`"+`

#### Error

`+"````\ninit: backend unreachable\n```injected``` @security-team\n````"+`

_driftwatch rewrites this description on every change (last: 2026-11-03 10:00 UTC, opened). Comment below rather than edit it. Attribute values are never shown here._
`, buildBody(m))
	})

	t.Run("forbidden", func(t *testing.T) {
		m := notifytest.Forbidden(notifytest.SampleMessage(notify.EventOpen), drift.Finding{Kind: drift.KindForbidden, Action: "create", Address: "kubernetes_deployment.api"})
		b := buildBody(m)
		require.Contains(t, b, "### Forbidden resource types in `prod/network`: 1 resource\n")
		require.Contains(t, b, "#### Findings (1 forbidden)\n")
		require.Contains(t, b, "| `forbidden` | `create` | `kubernetes_deployment.api` |  |\n")
		require.Equal(t, "Forbidden resource types in prod/network: 1 resource", buildTitle(m))
	})

	t.Run("what Terraform or users wrote renders as code, never as Markdown", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventUpdate)
		f := drift.Finding{Kind: drift.KindDrift, Action: "update", Address: `aws_iam_policy.p["a|b` + "`" + `c"]`, Attributes: []string{"tags.@admins", "<script>"}}
		m.Incident.Findings = []drift.Finding{f}
		m.Incident.Owner = "@org/everyone"
		m.Delta = &notify.Delta{Changed: []drift.Finding{f}}
		b := buildBody(m)
		require.Contains(t, b, "| `drift` | `update` | ``aws_iam_policy.p[\"a\\|b`c\"]`` | `tags.@admins`, `<script>` |\n")
		require.Contains(t, b, "**Owner:** `@org/everyone`")
		c, _ := buildComment(m)
		require.Contains(t, c, "- changed: drift update ``aws_iam_policy.p[\"a|b`c\"]`` (`tags.@admins`, `<script>`)\n")
	})

	t.Run("no status page, no run", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventRenotify)
		m.Incident.URL, m.Incident.RunID = "", ""
		require.NotContains(t, buildBody(m), "Status page")
		require.NotContains(t, buildBody(m), "Last run")
		c, _ := buildComment(m)
		require.Equal(t, "**Still open** since 2026-11-03 09:00 UTC: 1 drifted, 1 pending.\n\n<!-- driftwatch:message=msg-renotify-0001 -->\n", c)
	})

	t.Run("a status page that is not http(s) is not linked", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventOpen)
		m.Incident.URL = "javascript:alert(1)"
		require.NotContains(t, buildBody(m), "javascript")
	})

	t.Run("awaiting approval", func(t *testing.T) {
		m := notifytest.AwaitingApproval("approve")
		c, _ := buildComment(m)
		require.Equal(t, "**Remediation awaiting approval**: `rem-0007` (mode approve, 1 resource).\n"+
			"\nApprove with `driftwatch approve rem-0007` before 2026-11-04 10:00 UTC.\n"+statusLine+
			"\n<!-- driftwatch:message=msg-remediation-0001 -->\n", c)
	})

	t.Run("a message id that could end the marker is escaped", func(t *testing.T) {
		m := notifytest.SampleMessage(notify.EventRenotify)
		m.ID = "x --> <b>y</b>"
		c, _ := buildComment(m)
		require.True(t, strings.HasSuffix(c, "<!-- driftwatch:message=x%20--%3E%20%3Cb%3Ey%3C%2Fb%3E -->\n"), c)
		require.True(t, hasMessageMarker(c, m.ID))
	})

	t.Run("labels: the configured ones and the class label", func(t *testing.T) {
		require.Equal(t, []string{"driftwatch", "driftwatch:drift"}, issueLabels(labels(Config{}), notify.ClassDrift))
		require.Equal(t, []string{"driftwatch:errored"}, issueLabels(labels(Config{Labels: []string{}}), notify.ClassErrored))
		require.Equal(t, []string{"infra", "driftwatch:forbidden"}, issueLabels(labels(Config{Labels: []string{"infra", " infra ", "driftwatch:forbidden"}}), notify.ClassForbidden))
	})
}

func TestCheckMessage(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventOpen)
	m.Event = "snooze"
	require.EqualError(t, checkMessage(m), `unknown event "snooze"`)
	m = notifytest.SampleMessage(notify.EventRemediation)
	m.Remediation = nil
	require.EqualError(t, checkMessage(m), "message msg-remediation-0001: remediation event without its remediation")
	m = notifytest.SampleMessage(notify.EventOpen)
	m.Incident.Key = "Drift/x -->"
	require.EqualError(t, checkMessage(m), `incident key "Drift/x -->": want [a-z0-9-], at most 200 characters`)
}

// Bounds: 200 findings in the table with the rest counted, 20 paths per
// finding, 50 delta entries, and bodies within GitHub's 65536 characters.
func TestBuildBounds(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventUpdate)
	var fs []drift.Finding
	for i := range 250 {
		f := drift.Finding{Kind: drift.KindDrift, Action: "update", Address: "aws_instance.a" + strings.Repeat("x", i%40) + string(rune('a'+i%26))}
		paths := 2
		if i == 0 {
			paths = 25
		}
		for j := range paths {
			f.Attributes = append(f.Attributes, "tags.k"+strings.Repeat("y", j))
		}
		fs = append(fs, f)
	}
	m.Incident.Findings = fs
	m.Incident.Counts = drift.CountFindings(fs)
	m.Delta = &notify.Delta{Added: fs[:30], Changed: fs[30:]}
	b := buildBody(m)
	require.LessOrEqual(t, utf8.RuneCountInString(b), maxBody)
	require.Equal(t, 200, strings.Count(b, "\n| `drift` |"))
	require.Contains(t, b, "\n… and 50 more (see the status page).\n")
	require.Contains(t, b, ", +5 more |\n")
	c, _ := buildComment(m)
	require.Equal(t, 50, strings.Count(c, "\n- added: ")+strings.Count(c, "\n- changed: "))
	require.Contains(t, c, "\n- … and 200 more\n")

	// Long addresses: the table shrinks until the body fits.
	for i := range fs {
		fs[i].Address = strings.Repeat("m", 990) + string(rune('a'+i%26))
	}
	b = buildBody(m)
	require.LessOrEqual(t, utf8.RuneCountInString(b), maxBody)
	require.True(t, hasIncidentMarker(b, m.Incident.Key))
	require.Contains(t, b, " more (see the status page).\n")
	require.True(t, strings.HasSuffix(b, "Attribute values are never shown here._\n"), "cut rows, not the footer")

	m.Incident.Workspace = strings.Repeat("w", 400)
	require.Len(t, []rune(buildTitle(m)), maxTitle)
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	s := body(m, 10)
	notifytest.RequireProvenance(t, s)
	require.NotContains(t, body(notifytest.SampleMessage(notify.EventOpen), 10), "changed by")
}
