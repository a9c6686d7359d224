package github

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// GitHub's limits and our own bounds, which keep what is cut under our
// control.
const (
	maxTitle     = 256   // an issue's title, in characters
	maxBody      = 65536 // an issue's or a comment's body, in characters
	maxAddress   = 1000  // one address
	maxPath      = 256   // one attribute path
	maxPaths     = 20    // attribute paths per finding
	maxRows      = 200   // findings in the body's table
	maxDelta     = 50    // delta entries in an update's comment
	maxLine      = 1000  // an error, a reason
	markerPrefix = "<!-- driftwatch:"
)

// keyPattern is what an incident key may hold (notify.Incident.Key).
var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,199}$`)

// ClassLabel is the label every issue of class c gets, whatever
// Config.Labels says: "driftwatch:drift", "driftwatch:forbidden" or
// "driftwatch:errored". The notifier finds its issues by it.
func ClassLabel(c notify.Class) string { return "driftwatch:" + string(c) }

// incidentMarker is the hidden line that ties an issue to its incident.
func incidentMarker(key string) string { return markerPrefix + "incident=" + key + " -->" }

// messageMarker is the hidden line that ties a comment to its message.
func messageMarker(id string) string {
	return markerPrefix + "message=" + url.PathEscape(id) + " -->"
}

// hasIncidentMarker reports whether body is the issue of incident key.
func hasIncidentMarker(body, key string) bool {
	for line := range strings.Lines(body) {
		if strings.TrimSpace(line) == incidentMarker(key) {
			return true
		}
	}
	return false
}

// hasMessageMarker reports whether body is the comment of message id.
func hasMessageMarker(body, id string) bool {
	for line := range strings.Lines(body) {
		if strings.TrimSpace(line) == messageMarker(id) {
			return true
		}
	}
	return false
}

// checkMessage refuses what cannot become an issue: an unknown event, a
// key that cannot be a marker, a remediation event without its
// remediation.
func checkMessage(m notify.Message) error {
	if !keyPattern.MatchString(m.Incident.Key) {
		return fmt.Errorf("incident key %q: want [a-z0-9-], at most 200 characters", notify.Truncate(m.Incident.Key, 80))
	}
	return m.Check()
}

// issueLabels are the labels a new issue gets: the configured ones, then
// the class label.
func issueLabels(configured []string, c notify.Class) []string {
	out := slices.Clone(configured)
	if l := ClassLabel(c); !slices.Contains(out, l) {
		out = append(out, l)
	}
	return out
}

// buildTitle is the issue's title: the incident's one line.
func buildTitle(m notify.Message) string {
	return notify.Truncate(notify.OneLine(notify.Title(m.Incident)), maxTitle)
}

// buildBody is the issue's description after m: the incident marker, its
// status, where it is, its findings (addresses, actions and attribute
// paths, never values) and its links. It is rewritten in place on every
// message, so it always shows the incident as driftwatch last saw it.
func buildBody(m notify.Message) string {
	for rows := maxRows; ; rows /= 2 {
		b := body(m, rows)
		if utf8.RuneCountInString(b) <= maxBody || rows == 0 {
			return notify.Truncate(b, maxBody)
		}
	}
}

func body(m notify.Message, rows int) string {
	in := m.Incident
	var b strings.Builder
	b.WriteString(incidentMarker(in.Key) + "\n")
	fmt.Fprintf(&b, "### %s\n\n", heading(in))

	if m.Event == notify.EventResolve {
		fmt.Fprintf(&b, "- **Status:** resolved at %s%s\n", stamp(m.At), sinceText(in.Since, ", open since "))
	} else {
		fmt.Fprintf(&b, "- **Status:** open%s\n", sinceText(in.Since, " since "))
	}
	sev := mdText(string(in.Severity))
	if in.Escalated > 0 {
		sev += fmt.Sprintf(" (raised %s by failed remediations)", notify.Plural(in.Escalated, "step"))
	}
	fmt.Fprintf(&b, "- **Severity:** %s\n", sev)
	fmt.Fprintf(&b, "- **Workspace:** %s (class %s)\n", code(in.Workspace), code(string(in.Class)))
	if who := ownerText(in); who != "" {
		fmt.Fprintf(&b, "- %s\n", who)
	}
	if len(in.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
			ls = append(ls, code(k+"="+in.Labels[k]))
		}
		fmt.Fprintf(&b, "- **Labels:** %s\n", strings.Join(ls, ", "))
	}
	if links := runLinks(in); links != "" {
		fmt.Fprintf(&b, "- %s\n", links)
	}

	if in.Class == notify.ClassErrored && in.Error != "" {
		fmt.Fprintf(&b, "\n#### Error\n\n%s\n", codeBlock(notify.Truncate(in.Error, maxLine)))
	}
	if len(in.Findings) > 0 || in.Class != notify.ClassErrored {
		fmt.Fprintf(&b, "\n#### Findings (%s)\n\n", notify.CountsText(in.Counts))
		b.WriteString(findingsTable(in.Findings, rows, in.URL != ""))
	}
	fmt.Fprintf(&b, "\n_driftwatch rewrites this description on every change (last: %s, %s). Comment below rather than edit it. Attribute values are never shown here._\n",
		stamp(m.At), eventText(m))
	return b.String()
}

// buildComment is the comment m adds to the issue, with the message's
// marker; open adds none (the description says it all).
func buildComment(m notify.Message) (string, bool) {
	in := m.Incident
	var b strings.Builder
	switch m.Event {
	case notify.EventOpen:
		return "", false
	case notify.EventUpdate:
		d := m.Delta
		if d == nil {
			d = &notify.Delta{}
		}
		fmt.Fprintf(&b, "**Findings changed**%s: %d added, %d removed, %d changed. Now %s.\n",
			runText(in.RunID, " in run "), len(d.Added), len(d.Removed), len(d.Changed), notify.CountsText(in.Counts))
		b.WriteString(deltaList(d))
	case notify.EventRenotify:
		fmt.Fprintf(&b, "**Still open**%s%s: %s.\n", sinceText(in.Since, " since "), runText(in.RunID, ", last run "), notify.CountsText(in.Counts))
	case notify.EventRemediation:
		b.WriteString(remediationText(m))
	case notify.EventResolve:
		fmt.Fprintf(&b, "**Resolved** at %s%s%s. driftwatch reopens this issue if the same drift comes back.\n",
			stamp(m.At), runText(in.RunID, " by run "), sinceText(in.Since, "; open since "))
	}
	if in.URL != "" {
		fmt.Fprintf(&b, "\n%s\n", link("Status page", in.URL))
	}
	b.WriteString("\n" + messageMarker(m.ID) + "\n")
	// The marker is the last line: cut before it, never through it.
	s := b.String()
	if utf8.RuneCountInString(s) > maxBody {
		mk := "\n" + messageMarker(m.ID) + "\n"
		s = notify.Truncate(s, maxBody-utf8.RuneCountInString(mk)) + mk
	}
	return s, true
}

// heading is the body's heading: notify.Title's words with the workspace
// as a code span (an error's text goes in a block below it), so nothing a
// user wrote is rendered as Markdown.
func heading(in notify.Incident) string {
	ws := code(in.Workspace)
	switch in.Class {
	case notify.ClassErrored:
		return "Drift checks failing for " + ws
	case notify.ClassForbidden:
		return "Forbidden resource types in " + ws + ": " + notify.Plural(in.Counts.Forbidden, "resource")
	}
	if in.Counts.Drift+in.Counts.Pending == 0 {
		return "Terraform drift in " + ws
	}
	return "Terraform drift in " + ws + ": " + notify.CountsText(in.Counts)
}

func remediationText(m notify.Message) string {
	r := m.Remediation
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: %s (mode %s, %s)", r.Result.Title(mdText), code(r.ID), mdText(orNone(r.Mode)), notify.Plural(r.Resources, "resource"))
	if r.ApplyRunID != "" {
		run := code(r.ApplyRunID)
		if u := safeURL(r.URL); u != "" {
			run = "[" + run + "](" + u + ")"
		}
		b.WriteString(", apply run " + run)
	}
	b.WriteString(".\n")
	if r.Result == notify.RemediationAwaitingApproval {
		fmt.Fprintf(&b, "\nApprove with %s", code("driftwatch approve "+r.ID))
		if !r.ExpiresAt.IsZero() {
			fmt.Fprintf(&b, " before %s", stamp(r.ExpiresAt))
		}
		b.WriteString(".\n")
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "\nReason: %s\n", code(notify.Truncate(r.Reason, maxLine)))
	}
	if r.Result.Failed() && m.Incident.Escalated > 0 {
		fmt.Fprintf(&b, "\nSeverity raised to **%s**.\n", mdText(string(m.Incident.Severity)))
	}
	return b.String()
}

// eventText says what the last message was, for the body's footer.
func eventText(m notify.Message) string {
	return notify.EventWord(m, "still open", mdText)
}

func ownerText(in notify.Incident) string {
	var parts []string
	if in.Owner != "" {
		parts = append(parts, "**Owner:** "+code(in.Owner))
	}
	if in.Team != "" {
		parts = append(parts, "**Team:** "+code(in.Team))
	}
	return strings.Join(parts, " · ")
}

func runLinks(in notify.Incident) string {
	var parts []string
	if in.RunID != "" {
		parts = append(parts, "**Last run:** "+code(in.RunID))
	}
	if in.URL != "" {
		if l := link("Status page", in.URL); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " · ")
}

// findingsTable lists at most rows findings, with the rest counted.
func findingsTable(fs []drift.Finding, rows int, statusPage bool) string {
	if len(fs) == 0 {
		return "None.\n"
	}
	var b strings.Builder
	b.WriteString("| Kind | Action | Address | Attribute paths |\n| --- | --- | --- | --- |\n")
	n := min(len(fs), rows)
	for _, f := range fs[:n] {
		paths := pathsText(f.Attributes, true)
		if p := notify.Provenance(f); p != "" {
			paths += " — " + cell(p)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(string(f.Kind)), cell(f.Action),
			cell(notify.Truncate(f.Address, maxAddress)), paths)
	}
	if left := len(fs) - n; left > 0 {
		fmt.Fprintf(&b, "\n… and %d more", left)
		if statusPage {
			b.WriteString(" (see the status page)")
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// deltaList is an update's added, removed and changed findings, at most
// maxDelta of them, with the rest counted.
func deltaList(d *notify.Delta) string {
	var b strings.Builder
	left := maxDelta
	omitted := 0
	for _, part := range d.Parts() {
		for _, f := range part.Findings {
			if left == 0 {
				omitted++
				continue
			}
			left--
			if b.Len() == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "- %s: %s %s %s", part.What, mdText(string(f.Kind)), mdText(f.Action), code(notify.Truncate(f.Address, maxAddress)))
			if p := pathsText(f.Attributes, false); p != "" {
				b.WriteString(" (" + p + ")")
			}
			if p := notify.Provenance(f); p != "" {
				b.WriteString(" — " + mdText(p))
			}
			b.WriteString("\n")
		}
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "- … and %d more\n", omitted)
	}
	return b.String()
}

// pathsText lists attribute paths (never values) as code spans.
func pathsText(ps []string, inTable bool) string {
	span := code
	if inTable {
		span = cell
	}
	return strings.Join(notify.Capped(ps, maxPaths, "+%d more", func(p string) string { return span(notify.Truncate(p, maxPath)) }), ", ")
}

func sinceText(t time.Time, prefix string) string {
	if t.IsZero() {
		return ""
	}
	return prefix + stamp(t)
}

func runText(id, prefix string) string {
	if id == "" {
		return ""
	}
	return prefix + code(id)
}

// stamp is a time as the issue shows it, in UTC to the minute.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// code is s on one line as a Markdown code span: no mention, reference,
// link or HTML in it is rendered.
func code(s string) string {
	s = notify.OneLine(s)
	if s == "" {
		return "` `"
	}
	return notify.CodeSpan(s)
}

// cell is code for a table cell, where a pipe must be escaped even in a
// code span.
func cell(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return strings.ReplaceAll(code(s), "|", `\|`)
}

// codeBlock is s in a fenced block longer than any backtick run in it.
func codeBlock(s string) string {
	fence := notify.Fence(s, 3)
	return fence + "\n" + strings.TrimRight(s, "\n") + "\n" + fence
}

// mdText is s on one line with Markdown's punctuation escaped, so it
// renders as the text it is (no link, emphasis or HTML). Only words
// driftwatch chose go through it (severities, actions, modes): anything a
// user wrote is a code span, where GitHub renders no mention either.
func mdText(s string) string {
	s = notify.OneLine(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_{}[]()<>#+!|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// link is a Markdown link to an http(s) URL ("" for anything else).
func link(text, u string) string {
	if s := safeURL(u); s != "" {
		return "[" + text + "](" + s + ")"
	}
	return ""
}

// safeURL is u if it is an absolute http(s) URL, with the characters
// that would end a Markdown link destination percent-encoded.
func safeURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
		return ""
	}
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(p.String())
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
