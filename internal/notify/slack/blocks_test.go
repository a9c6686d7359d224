package slack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

var since = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

func testMessage(ev notify.Event, id string, fs ...drift.Finding) notify.Message {
	return notify.Message{
		ID:    id,
		Event: ev,
		Incident: notify.Incident{
			Key:       "drift-prod-network",
			Workspace: "prod-network",
			Class:     notify.ClassDrift,
			Severity:  notify.SeverityCritical,
			Owner:     "network-team",
			Since:     since,
			Findings:  fs,
			Counts:    drift.CountFindings(fs),
			RunID:     "run-0042",
		},
		At: since.Add(3 * time.Hour),
	}
}

var (
	sg     = drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update", Attributes: []string{"ingress", "tags.Name"}}
	bucket = drift.Finding{Kind: drift.KindPending, Address: "aws_s3_bucket.logs", Type: "aws_s3_bucket", Action: "create"}
	helm   = drift.Finding{Kind: drift.KindForbidden, Address: "helm_release.ingress", Type: "helm_release", Action: "update", SeenIn: []string{"state", "plan"}}
)

// blocksJSON marshals blocks, without json's HTML escaping so that tests
// can search for "&lt;" rather than "\u0026lt;".
func blocksJSON(t *testing.T, blocks []slackgo.Block) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(blocks))
	return strings.TrimSpace(b.String())
}

// requireWithinLimits checks blocks against Slack's limits twice: with the
// fake server's checker and with the numbers spelled out here.
func requireWithinLimits(t *testing.T, blocks []slackgo.Block) {
	t.Helper()
	raw := blocksJSON(t, blocks)
	require.NoError(t, notifytest.SlackCheckBlocks([]byte(raw)))
	require.LessOrEqual(t, len(blocks), 50, "blocks")
	total := 0
	for i, b := range blocks {
		n := blockTextLen(b)
		total += n
		switch b := b.(type) {
		case *slackgo.HeaderBlock:
			require.LessOrEqual(t, utf8.RuneCountInString(b.Text.Text), 150, "header")
		case *slackgo.SectionBlock:
			if b.Text != nil {
				require.LessOrEqual(t, utf8.RuneCountInString(b.Text.Text), 3000, "section %d", i)
				require.NoError(t, b.Text.Validate())
			}
			for _, f := range b.Fields {
				require.LessOrEqual(t, utf8.RuneCountInString(f.Text), 2000, "field")
			}
		}
	}
	require.LessOrEqual(t, total, 12000, "total block text")
	require.NotContains(t, raw, `"="`) // no attribute values ever: the builders have none to print
}

func TestBuildBlocksExact(t *testing.T) {
	m := testMessage(notify.EventOpen, "m1", sg, bucket)
	m.Incident.URL = "https://driftwatch.example.com/w/prod-network?x=1&y=2"
	want := `[
	{"type":"header","text":{"type":"plain_text","text":":rotating_light: Drift in prod-network","emoji":true}},
	{"type":"section","fields":[
		{"type":"mrkdwn","text":"*Severity*\n:rotating_light: critical"},
		{"type":"mrkdwn","text":"*Owner*\nnetwork-team"},
		{"type":"mrkdwn","text":"*Since*\n<!date^1793696400^{date_short_pretty} {time}|2026-11-03 09:00 UTC>"},
		{"type":"mrkdwn","text":"*Status*\nOpen for 3h"},
		{"type":"mrkdwn","text":"*Findings*\n1 drifted · 1 pending"}]},
	{"type":"divider"},
	{"type":"section","text":{"type":"mrkdwn","text":"*Drifted (changed outside Terraform)*\n• ` + "`aws_security_group.web` _update_: `ingress`, `tags.Name`" + `\n*Pending (not applied)*\n• ` + "`aws_s3_bucket.logs` _create_" + `"}},
	{"type":"context","elements":[{"type":"mrkdwn","text":"driftwatch · run ` + "`run-0042`" + ` · incident ` + "`drift-prod-network`" + ` · <https://driftwatch.example.com/w/prod-network?x=1&amp;y=2|Open status page>"}]}
]`
	require.JSONEq(t, want, blocksJSON(t, buildBlocks(m)))
	require.Equal(t, "[critical] Drift in prod-network: 1 drifted · 1 pending", buildText(m))
}

func TestBuildBlocks(t *testing.T) {
	errored := testMessage(notify.EventOpen, "m1")
	errored.Incident.Class = notify.ClassErrored
	errored.Incident.Severity = notify.SeverityHigh
	errored.Incident.Error = "terraform init: exit status 1: Error: Failed to query available provider packages <x> ```"

	resolved := testMessage(notify.EventResolve, "m9", sg)

	noOwner := testMessage(notify.EventOpen, "m1", helm)
	noOwner.Incident.Owner = ""
	noOwner.Incident.Class = notify.ClassForbidden
	noOwner.Incident.Since = time.Time{}

	injection := testMessage(notify.EventOpen, "m1", drift.Finding{Kind: drift.KindDrift, Address: "aws_iam_user.u[\"<!channel>`x\"]", Action: "update", Attributes: []string{"tags.<@U123>"}})
	injection.Incident.Owner = "<!here> & co"
	injection.Incident.URL = "javascript:alert(1)"

	for _, tc := range []struct {
		name        string
		m           notify.Message
		contains    []string
		notContains []string
		text        string
	}{
		{
			name: "errored",
			m:    errored,
			contains: []string{
				`":red_circle: Failing runs in prod-network"`,
				":warning: *Error*\\n```terraform init: exit status 1: Error: Failed to query available provider packages &lt;x&gt; '''```",
			},
			notContains: []string{"*Findings*", `"divider"`},
			text:        "[high] Failing runs in prod-network: terraform init: exit status 1: Error: Failed to query available provider packages &lt;x&gt; ```",
		},
		{
			name:        "resolved",
			m:           resolved,
			contains:    []string{`":white_check_mark: Resolved: Drift in prod-network"`, `*Status*\nResolved after 3h`, `*Last findings*\n1 drifted`},
			notContains: []string{"aws_security_group.web", `"divider"`},
			text:        "Resolved: Drift in prod-network after 3h",
		},
		{
			name:     "forbidden, no owner, no since",
			m:        noOwner,
			contains: []string{`":rotating_light: Forbidden resource types in prod-network"`, `*Owner*\n—`, `*Since*\n—`, `*Status*\nOpen"`, "• `helm_release.ingress` _forbidden type_ `helm_release` (in state, plan)"},
			text:     "[critical] Forbidden resource types in prod-network: 1 forbidden",
		},
		{
			name:        "mrkdwn injection is escaped, bad URL dropped",
			m:           injection,
			contains:    []string{`&lt;!here&gt; &amp; co`, "`aws_iam_user.u[\\\"&lt;!channel&gt;'x\\\"]`", "`tags.&lt;@U123&gt;`"},
			notContains: []string{"<!here>", "<!channel>", "<@U123>", "javascript:", "Open status page"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := buildBlocks(tc.m)
			requireWithinLimits(t, blocks)
			raw := blocksJSON(t, blocks)
			for _, s := range tc.contains {
				require.Contains(t, raw, s)
			}
			for _, s := range tc.notContains {
				require.NotContains(t, raw, s)
			}
			if tc.text != "" {
				require.Equal(t, tc.text, buildText(tc.m))
			}
		})
	}
}

func TestBuildThreadBlocks(t *testing.T) {
	update := testMessage(notify.EventUpdate, "m2", sg, bucket, helm)
	update.Delta = &notify.Delta{Added: []drift.Finding{helm}, Removed: []drift.Finding{{Kind: drift.KindDrift, Address: "aws_instance.old", Action: "delete"}}, Changed: []drift.Finding{sg}}
	renotify := testMessage(notify.EventRenotify, "m3", sg)
	renotify.At = since.Add(50 * time.Hour)
	resolve := testMessage(notify.EventResolve, "m4")
	for _, tc := range []struct {
		name     string
		m        notify.Message
		sections []string
		text     string
	}{
		{
			name: "update",
			m:    update,
			sections: []string{
				"*Findings changed* · 1 added, 1 removed, 1 changed · now 1 forbidden · 1 drifted · 1 pending.",
				"*Added (1)*\n• `helm_release.ingress` _forbidden type_ `helm_release` (in state, plan)\n*Removed (1)*\n• `aws_instance.old` _delete_\n*Changed (1)*\n• `aws_security_group.web` _update_: `ingress`, `tags.Name`",
			},
			text: "Findings changed: 1 added, 1 removed, 1 changed",
		},
		{
			name:     "update without delta",
			m:        testMessage(notify.EventUpdate, "m2", sg),
			sections: []string{"*Findings changed* · now 1 drifted."},
			text:     "Findings changed",
		},
		{
			name:     "renotify",
			m:        renotify,
			sections: []string{":alarm_clock: *Still open* after 2d 2h · 1 drifted."},
			text:     "Still open after 2d 2h: Drift in prod-network",
		},
		{
			name:     "resolve",
			m:        resolve,
			sections: []string{":white_check_mark: *Resolved* after 3h."},
			text:     "Resolved after 3h",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := buildThreadBlocks(tc.m)
			requireWithinLimits(t, blocks)
			var got []string
			for _, b := range blocks {
				if s, ok := b.(*slackgo.SectionBlock); ok {
					got = append(got, s.Text.Text)
				}
			}
			require.Equal(t, tc.sections, got)
			require.Equal(t, tc.text, buildThreadText(tc.m))
			_, isContext := blocks[len(blocks)-1].(*slackgo.ContextBlock)
			require.True(t, isContext, "ends with the context line")
		})
	}
}

func TestBuildWebhookBlocks(t *testing.T) {
	update := testMessage(notify.EventUpdate, "m2", sg, bucket)
	update.Delta = &notify.Delta{Added: []drift.Finding{bucket}}
	raw := blocksJSON(t, buildWebhookBlocks(update))
	require.Contains(t, raw, `":rotating_light: Drift in prod-network (changed)"`)
	require.Contains(t, raw, "*Added (1)*\\n• `aws_s3_bucket.logs` _create_\\n*Drifted (changed outside Terraform)*")

	renotify := testMessage(notify.EventRenotify, "m3", sg)
	require.Contains(t, blocksJSON(t, buildWebhookBlocks(renotify)), `":rotating_light: Still open: Drift in prod-network"`)

	resolve := testMessage(notify.EventResolve, "m4", sg)
	raw = blocksJSON(t, buildWebhookBlocks(resolve))
	require.Contains(t, raw, `":white_check_mark: Resolved: Drift in prod-network"`)
	require.NotContains(t, raw, "aws_security_group.web")
}

var moreLine = regexp.MustCompile(`_…and (\d+) more_`)

// listed counts the finding lines in blocks and returns the "…and N more" N.
func listed(t *testing.T, blocks []slackgo.Block) (shown, more int) {
	t.Helper()
	for _, b := range blocks {
		s, ok := b.(*slackgo.SectionBlock)
		if !ok || s.Text == nil {
			continue
		}
		for _, line := range strings.Split(s.Text.Text, "\n") {
			if strings.HasPrefix(line, "• ") {
				shown++
			}
			if m := moreLine.FindStringSubmatch(line); m != nil {
				n, err := strconv.Atoi(m[1])
				require.NoError(t, err)
				more += n
			}
		}
	}
	return shown, more
}

func TestBuildBlocksSizeLimits(t *testing.T) {
	var fs []drift.Finding
	for i := range 500 {
		var attrs []string
		for j := range 40 {
			attrs = append(attrs, fmt.Sprintf("spec[0].template[0].spec[0].container[%d].env[%d].value_from[0].secret_key_ref[0].name_%s", j, i, strings.Repeat("x", 80)))
		}
		fs = append(fs, drift.Finding{
			Kind:       []drift.Kind{drift.KindForbidden, drift.KindDrift, drift.KindPending}[i%3],
			Address:    fmt.Sprintf(`module.platform["%s"].module.k8s.kubernetes_deployment_v1.app["%04d-%s"]`, strings.Repeat("very-long-module-key-", 10), i, strings.Repeat("y", 200)),
			Type:       "kubernetes_deployment_v1",
			Action:     "update",
			Attributes: attrs,
			SeenIn:     []string{"config", "state", "plan"},
		})
	}
	drift.SortFindings(fs)
	big := func(ev notify.Event) notify.Message {
		m := testMessage(ev, "m-big", fs...)
		m.Incident.Workspace = strings.Repeat("workspace-", 100)
		m.Incident.Owner = strings.Repeat("owner & <team> ", 500)
		m.Incident.RunID = strings.Repeat("r", 5000)
		m.Incident.Key = strings.Repeat("k", 5000)
		m.Incident.URL = "https://driftwatch.example.com/" + strings.Repeat("p", 900)
		m.Incident.Error = strings.Repeat("error text ", 10000)
		m.Delta = &notify.Delta{Added: fs, Removed: fs, Changed: fs}
		return m
	}
	for _, tc := range []struct {
		name   string
		build  func(notify.Message) []slackgo.Block
		ev     notify.Event
		listed int // findings in the message's list(s)
	}{
		{"status", buildBlocks, notify.EventOpen, 500},
		{"thread update", buildThreadBlocks, notify.EventUpdate, 1500},
		{"webhook update", buildWebhookBlocks, notify.EventUpdate, 2000},
		{"webhook open", buildWebhookBlocks, notify.EventOpen, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := big(tc.ev)
			blocks := tc.build(m)
			requireWithinLimits(t, blocks)
			shown, more := listed(t, blocks)
			require.Positive(t, shown)
			require.Positive(t, more)
			require.Equal(t, tc.listed, shown+more, "every finding is listed or counted")
			require.LessOrEqual(t, utf8.RuneCountInString(buildText(m)), maxFallbackText+100)
		})
	}
	t.Run("errored with a huge error", func(t *testing.T) {
		m := big(notify.EventOpen)
		m.Incident.Class = notify.ClassErrored
		m.Incident.Findings = nil
		requireWithinLimits(t, buildBlocks(m))
		requireWithinLimits(t, buildThreadBlocks(m))
	})
	t.Run("many short findings fill at most 50 blocks", func(t *testing.T) {
		var short []drift.Finding
		for i := range 5000 {
			short = append(short, drift.Finding{Kind: drift.KindDrift, Address: fmt.Sprintf("a.b%d", i), Action: "update"})
		}
		m := testMessage(notify.EventUpdate, "m", short...)
		m.Delta = &notify.Delta{Added: short, Removed: short, Changed: short}
		for _, build := range []func(notify.Message) []slackgo.Block{buildBlocks, buildThreadBlocks, buildWebhookBlocks} {
			blocks := build(m)
			requireWithinLimits(t, blocks)
		}
	})
}

func TestCompose(t *testing.T) {
	line := "• " + strings.Repeat("x", 998) // 1000 runes
	lines := make([]string, 100)
	for i := range lines {
		lines[i] = line
	}
	t.Run("splits sections and stops at the total budget", func(t *testing.T) {
		blocks := compose(nil, []group{{title: "*T*", lines: lines}}, nil)
		requireWithinLimits(t, blocks)
		shown, more := listed(t, blocks)
		require.Equal(t, 100, shown+more)
		require.Equal(t, 10, shown, "11000 characters hold 10 lines of 1000")
		require.Len(t, blocks, 5, "at most 2 lines of 1000 per section below 3000 - reserve")
	})
	t.Run("stops at the block budget", func(t *testing.T) {
		head := make([]slackgo.Block, 48)
		for i := range head {
			head[i] = slackgo.NewDividerBlock()
		}
		blocks := compose(head, []group{{lines: lines}}, []slackgo.Block{slackgo.NewDividerBlock()})
		require.Len(t, blocks, 50)
		shown, more := listed(t, blocks)
		require.Equal(t, 2, shown)
		require.Equal(t, 98, more)
	})
	t.Run("no room at all", func(t *testing.T) {
		head := make([]slackgo.Block, 50)
		for i := range head {
			head[i] = slackgo.NewDividerBlock()
		}
		require.Len(t, compose(head, []group{{lines: lines}}, nil), 50)
	})
	t.Run("nothing to list", func(t *testing.T) {
		require.Empty(t, compose(nil, nil, nil))
	})
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second:              "under a minute",
		45 * time.Minute:              "45m",
		3 * time.Hour:                 "3h",
		3*time.Hour + 5*time.Minute:   "3h 5m",
		24 * time.Hour:                "1d",
		50*time.Hour + 59*time.Minute: "2d 2h",
	} {
		require.Equal(t, want, humanDuration(d), "%s", d)
	}
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	var s string
	for _, f := range m.Incident.Findings {
		s += findingLine(f) + "\n"
	}
	for _, p := range notifytest.Provenance {
		require.Contains(t, s, " — "+p)
	}
}
