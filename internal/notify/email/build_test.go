package email

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/email/emailcfg"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func testOptions(t *testing.T) options {
	t.Helper()
	from, err := emailcfg.Address("driftwatch <driftwatch@example.com>")
	require.NoError(t, err)
	a, err := emailcfg.Address("oncall@example.com")
	require.NoError(t, err)
	b, err := emailcfg.Address("Équipe Réseau <network@example.com>")
	require.NoError(t, err)
	return options{from: from, to: []*mail.Address{a, b}, prefix: DefaultSubjectPrefix}
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// The open message, byte for byte: 7-bit headers (the non-ASCII display
// name RFC 2047 encoded, folded), the thread root's Message-ID, and a
// quoted-printable body.
func TestBuildOpenExact(t *testing.T) {
	msg, err := buildMessage(notifytest.SampleMessage(notify.EventOpen), testOptions(t))
	require.NoError(t, err)
	require.Equal(t, "driftwatch@example.com", msg.From)
	require.Equal(t, []string{"oncall@example.com", "network@example.com"}, msg.To)
	require.Equal(t, "<dw-drift-prod-network-3f9a2c.20261103T090000Z@example.com>", msg.ID)
	require.Equal(t, crlf(`Date: Tue, 03 Nov 2026 10:00:00 +0000
From: "driftwatch" <driftwatch@example.com>
To: <oncall@example.com>, =?utf-8?q?=C3=89quipe_R=C3=A9seau?=
 <network@example.com>
Subject: [driftwatch] Terraform drift in prod/network
Message-ID: <dw-drift-prod-network-3f9a2c.20261103T090000Z@example.com>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable
Auto-Submitted: auto-generated
X-Auto-Response-Suppress: All
X-Driftwatch-Event: open
X-Driftwatch-Incident: drift-prod-network-3f9a2c
X-Driftwatch-Severity: high

Terraform drift in prod/network: 1 drifted, 1 pending

Event:       opened
Workspace:   prod/network
Class:       drift
Severity:    high
Owner:       network-team
Team:        platform
Since:       2026-11-03 09:00:00 UTC
Run:         run-0042
Labels:      env=3Dprod, tier=3Dcore
Counts:      1 drifted, 1 pending, 0 forbidden

Findings (2):
  - update aws_security_group.web [drift]
      attributes: ingress, tags.Name
  - create aws_s3_bucket.logs [pending]

Status page: https://driftwatch.example.com/workspaces/prod%2Fnetwork

--=20
driftwatch incident drift-prod-network-3f9a2c
Findings name resources and attribute paths, never values.
`), string(msg.Data))
}

// parsed is a built message as a mail client reads it.
type parsed struct {
	header mail.Header
	body   string
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	requireSevenBit(t, data)
	m, err := mail.ReadMessage(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, "quoted-printable", m.Header.Get("Content-Transfer-Encoding"))
	b, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	require.NoError(t, err)
	return parsed{header: m.Header, body: strings.ReplaceAll(string(b), "\r\n", "\n")}
}

// requireSevenBit: ASCII only, CRLF line ends only, no line over 998
// characters (RFC 5322) and header lines within 78 unless one word is
// longer.
func requireSevenBit(t *testing.T, data []byte) {
	t.Helper()
	for i, c := range data {
		require.Less(t, c, byte(0x80), "byte %d is not 7-bit", i)
		if c == '\n' {
			require.True(t, i > 0 && data[i-1] == '\r', "bare LF at %d", i)
		}
		if c == '\r' {
			require.True(t, i+1 < len(data) && data[i+1] == '\n', "bare CR at %d", i)
		}
	}
	for _, l := range strings.Split(string(data), "\r\n") {
		require.LessOrEqual(t, len(l), 998)
	}
}

func decodeHeader(t *testing.T, v string) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(v)
	require.NoError(t, err)
	return s
}

// What changes along a thread: the subject gains "Re: ", every reply
// points at the open message, the body says what the message reports.
func TestBuildThread(t *testing.T) {
	const root = "<dw-drift-prod-network-3f9a2c.20261103T090000Z@example.com>"
	const context = `Workspace:   prod/network
Class:       drift
`
	const who = `Owner:       network-team
Team:        platform
Since:       2026-11-03 09:00:00 UTC
Run:         run-0042
Labels:      env=prod, tier=core
`
	const findings = `Counts:      1 drifted, 1 pending, 0 forbidden

Findings (2):
  - update aws_security_group.web [drift]
      attributes: ingress, tags.Name
  - create aws_s3_bucket.logs [pending]
`
	const tail = `
Status page: https://driftwatch.example.com/workspaces/prod%2Fnetwork

-- 
driftwatch incident drift-prod-network-3f9a2c
Findings name resources and attribute paths, never values.
`
	for _, tc := range []struct {
		event notify.Event
		id    string
		body  string
	}{
		{notify.EventUpdate, "<dw-msg-update-0001@example.com>", `Terraform drift in prod/network: 1 drifted, 1 pending (findings changed)

Event:       findings changed
` + context + "Severity:    high\n" + who + findings + `
What changed:
  Added (1):
    - create aws_s3_bucket.logs [pending]
` + tail},
		{notify.EventRemediation, "<dw-msg-remediation-0001@example.com>", `Terraform drift in prod/network: 1 drifted, 1 pending (remediation failed)

Event:       remediation failed
` + context + "Severity:    critical (raised 1 step by failed remediations)\n" + who + findings + `
Remediation rem-0007 (auto): failed
  Reason:     apply: Error: Cannot write file (aws_security_group.web, main.tf line 3)
  Resources:  1
  Apply run:  run-0043
  Details:    https://driftwatch.example.com/runs/run-0043
` + tail},
		{notify.EventRenotify, "<dw-msg-renotify-0001@example.com>", `Terraform drift in prod/network: 1 drifted, 1 pending (still open since 2026-11-03 09:00:00 UTC)

Event:       still open (reminder)
` + context + "Severity:    high\n" + who + findings + tail},
		{notify.EventResolve, "<dw-msg-resolve-0001@example.com>", `Resolved: Terraform drift in prod/network

Event:       resolved
` + context + "Severity:    high\n" + who + tail},
	} {
		t.Run(string(tc.event), func(t *testing.T) {
			msg, err := buildMessage(notifytest.SampleMessage(tc.event), testOptions(t))
			require.NoError(t, err)
			require.Equal(t, tc.id, msg.ID)
			p := parse(t, msg.Data)
			require.Equal(t, "Re: [driftwatch] Terraform drift in prod/network", decodeHeader(t, p.header.Get("Subject")))
			require.Equal(t, tc.id, p.header.Get("Message-ID"))
			require.Equal(t, root, p.header.Get("In-Reply-To"))
			require.Equal(t, root, p.header.Get("References"))
			require.Equal(t, string(tc.event), p.header.Get("X-Driftwatch-Event"))
			require.Equal(t, tc.body, p.body)
		})
	}
}

// Message-IDs are derived, never random: a resend of one message (or a
// crash replay) carries the same Message-ID; another incident (a
// re-open: another Since) starts another thread.
func TestMessageIDs(t *testing.T) {
	o := testOptions(t)
	build := func(m notify.Message) message {
		t.Helper()
		msg, err := buildMessage(m, o)
		require.NoError(t, err)
		return msg
	}
	open := notifytest.SampleMessage(notify.EventOpen)
	first := build(open).ID
	require.Equal(t, first, build(open).ID, "a resend has the same Message-ID")
	upd := notifytest.SampleMessage(notify.EventUpdate)
	first = build(upd).ID
	require.Equal(t, first, build(upd).ID, "a resend has the same Message-ID")

	reopened := open
	reopened.ID = "msg-open-0002"
	reopened.Incident.Since = open.Incident.Since.Add(48 * time.Hour)
	require.Equal(t, "<dw-drift-prod-network-3f9a2c.20261105T090000Z@example.com>", build(reopened).ID)

	// IDs as the outbox writes them ("<message>/<notifier>") are kept;
	// anything that is not a dot-atom is hashed, deterministically.
	for id, want := range map[string]string{
		"01JD9Z4M8Q/mail-oncall": "<dw-01JD9Z4M8Q/mail-oncall@example.com>",
		"a b":                    "<dw-h" + "c8687a08aa5d6ed2044328fa6a697ab8@example.com>",
		"x>@evil":                build(withID(upd, "x>@evil")).ID,
		strings.Repeat("a", 101): build(withID(upd, strings.Repeat("a", 101))).ID,
	} {
		got := build(withID(upd, id)).ID
		require.Equal(t, want, got, id)
		require.Regexp(t, `^<dw-[A-Za-z0-9._/+=-]+@example\.com>$`, got)
	}
	require.Len(t, build(withID(upd, strings.Repeat("a", 101))).ID, len("<dw-h@example.com>")+32)
}

func withID(m notify.Message, id string) notify.Message {
	m.ID = id
	return m
}

// CR and LF anywhere in the incident (a workspace name, an owner, a
// label, a finding's address, a remediation's reason) cannot add a
// header, end the headers or end the message: every field is one line.
func TestHeaderInjection(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventRemediation)
	m.Incident.Workspace = "prod\r\nBcc: victim@example.net\r\n\r\nforged body"
	m.Incident.Owner = "team\nX-Injected: 1"
	m.Incident.Labels = map[string]string{"env\r\nX-Label: 1": "prod\r\n.\r\nQUIT"}
	m.Incident.Key = "drift-prod-3f9a2c\r\nX-Key: 1"
	m.Incident.Findings[0].Address = "aws_s3_bucket.x\r\n.\r\nMAIL FROM:<evil@example.net>"
	m.Incident.Findings[0].Attributes = []string{"tags\r\nSubject: forged"}
	m.Remediation.Reason = "line one\r\n\r\nline two\u2028three\x00four"
	msg, err := buildMessage(m, testOptions(t))
	require.NoError(t, err)
	p := parse(t, msg.Data)

	var keys []string
	for k := range p.header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	require.Equal(t, []string{"Auto-Submitted", "Content-Transfer-Encoding", "Content-Type", "Date", "From", "In-Reply-To",
		"Message-Id", "Mime-Version", "References", "Subject", "To", "X-Auto-Response-Suppress",
		"X-Driftwatch-Event", "X-Driftwatch-Incident", "X-Driftwatch-Severity"}, keys)
	require.Equal(t, "Re: [driftwatch] Terraform drift in prod Bcc: victim@example.net forged body", decodeHeader(t, p.header.Get("Subject")))
	require.Contains(t, p.body, "\nWorkspace:   prod Bcc: victim@example.net forged body\n")
	require.Contains(t, p.body, "\nOwner:       team X-Injected: 1\n")
	require.Contains(t, p.body, "\nLabels:      env X-Label: 1=prod . QUIT\n")
	require.Contains(t, p.body, "\n  - update aws_s3_bucket.x . MAIL FROM:<evil@example.net> [drift]\n      attributes: tags Subject: forged\n")
	require.Contains(t, p.body, "\n  Reason:     line one line two three four\n")
	require.Equal(t, "drift-prod-3f9a2c X-Key: 1", p.header.Get("X-Driftwatch-Incident"))
	require.Regexp(t, `^<dw-h[0-9a-f]{32}\.20261103T090000Z@example\.com>$`, p.header.Get("In-Reply-To"), "a key that is not a dot-atom is hashed")
	for _, l := range strings.Split(p.body, "\n") {
		require.NotEqual(t, ".", l)
	}
}

// A UTF-8 workspace reaches the subject as RFC 2047 encoded-words and
// the body as quoted-printable: the wire stays 7-bit, a mail client
// shows the text.
func TestNonASCII(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventOpen)
	m.Incident.Workspace = "prod/réseau-東京"
	m.Incident.Owner = "équipe-réseau"
	o := testOptions(t)
	o.prefix = "[dérive]"
	msg, err := buildMessage(m, o)
	require.NoError(t, err)
	p := parse(t, msg.Data)
	raw := p.header.Get("Subject")
	require.True(t, strings.HasPrefix(raw, "=?utf-8?q?"), raw)
	require.Equal(t, "[dérive] Terraform drift in prod/réseau-東京", decodeHeader(t, raw))
	require.Contains(t, p.body, "Terraform drift in prod/réseau-東京: 1 drifted, 1 pending\n")
	require.Contains(t, p.body, "\nOwner:       équipe-réseau\n")
	to, err := p.header.AddressList("To")
	require.NoError(t, err)
	require.Equal(t, "Équipe Réseau", to[1].Name)
}

// Long subjects fold within 78 characters where they have spaces; many
// findings are listed up to the bound and the rest counted.
func TestLongMessage(t *testing.T) {
	m := notifytest.SampleMessage(notify.EventUpdate)
	m.Incident.Workspace = strings.Repeat("very long workspace name ", 10)
	var fs []drift.Finding
	for i := range 60 {
		f := drift.Finding{Kind: drift.KindDrift, Action: "update", Address: fmt.Sprintf("aws_instance.web[%d]", i)}
		for j := range 25 * min(1, 1-i) { // the first finding only
			f.Attributes = append(f.Attributes, fmt.Sprintf("tags.k%d", j))
		}
		fs = append(fs, f)
	}
	m.Incident.Findings = fs
	m.Delta = &notify.Delta{Added: fs[:40], Removed: fs[40:], Changed: fs[:5]}
	msg, err := buildMessage(m, testOptions(t))
	require.NoError(t, err)
	head, _, _ := strings.Cut(string(msg.Data), "\r\n\r\n")
	for _, l := range strings.Split(head, "\r\n") {
		require.LessOrEqual(t, len(l), 78, l)
	}
	p := parse(t, msg.Data)
	require.Equal(t, "Re: [driftwatch] Terraform drift in "+notify.Truncate(strings.TrimSpace(m.Incident.Workspace), maxWorkspace),
		decodeHeader(t, p.header.Get("Subject")))
	require.Contains(t, p.body, "\nFindings (60):\n")
	require.Contains(t, p.body, "  - update aws_instance.web[49] [drift]\n")
	require.NotContains(t, p.body, "  - update aws_instance.web[50] [drift]\n")
	require.Contains(t, p.body, "\n  - and 10 more (see the status page)\n")
	require.Contains(t, p.body, "attributes: tags.k0, tags.k1, tags.k2, tags.k3, tags.k4, tags.k5, tags.k6, tags.k7, tags.k8, tags.k9, tags.k10, tags.k11, tags.k12, tags.k13, tags.k14, tags.k15, tags.k16, tags.k17, tags.k18, tags.k19, and 5 more\n")
	// The delta shares the bound: 40 added, 10 of 20 removed, no changed.
	require.Contains(t, p.body, "\n  Added (40):\n")
	require.Contains(t, p.body, "\n  Removed (20):\n")
	require.Contains(t, p.body, "\n    - update aws_instance.web[49] [drift]\n    - and 10 more (see the status page)\n  Changed (5):\n    - and 5 more (see the status page)\n")
}

// The other classes' subjects and what an errored incident says.
func TestClasses(t *testing.T) {
	m := notifytest.Errored(notifytest.SampleMessage(notify.EventOpen), "init: Error: Failed to query\navailable provider packages")
	msg, err := buildMessage(m, testOptions(t))
	require.NoError(t, err)
	p := parse(t, msg.Data)
	require.Equal(t, "[driftwatch] Drift checks failing for prod/network", decodeHeader(t, p.header.Get("Subject")))
	require.True(t, strings.HasPrefix(p.body, "Drift checks failing for prod/network: init: Error: Failed to query available provider packages\n"), p.body)
	require.Contains(t, p.body, "\nError:       init: Error: Failed to query available provider packages\n")
	require.NotContains(t, p.body, "Findings (")
	require.NotContains(t, p.body, "Counts:")

	m = notifytest.Forbidden(notifytest.SampleMessage(notify.EventOpen), drift.Finding{Kind: drift.KindForbidden, Action: "manage", Address: "kubernetes_manifest.app", SeenIn: []string{"config", "state"}})
	msg, err = buildMessage(m, testOptions(t))
	require.NoError(t, err)
	p = parse(t, msg.Data)
	require.Equal(t, "[driftwatch] Forbidden resource types in prod/network", decodeHeader(t, p.header.Get("Subject")))
	require.Contains(t, p.body, "\n  - manage kubernetes_manifest.app [forbidden]\n      seen in: config, state\n")
}

func TestBuildErrors(t *testing.T) {
	o := testOptions(t)
	m := notifytest.SampleMessage(notify.EventOpen)
	m.Event = "snooze"
	_, err := buildMessage(m, o)
	require.EqualError(t, err, `unknown event "snooze"`)

	m = notifytest.SampleMessage(notify.EventRemediation)
	m.Remediation = nil
	_, err = buildMessage(m, o)
	require.EqualError(t, err, "message msg-remediation-0001: remediation event without its remediation")

	_, err = buildMessage(withID(notifytest.SampleMessage(notify.EventOpen), ""), o)
	require.EqualError(t, err, "message without an ID: no Message-ID to derive")
}

// A finding's provenance (who changed a drift, the commit behind a
// pending change) is listed with it.
func TestProvenance(t *testing.T) {
	m := notifytest.Attributed(notifytest.SampleMessage(notify.EventOpen))
	s := body(m)
	notifytest.RequireProvenance(t, s)
	require.NotContains(t, body(notifytest.SampleMessage(notify.EventOpen)), "changed by")
}
