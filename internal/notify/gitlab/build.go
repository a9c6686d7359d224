package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// GitLab's limits and our own bounds, which keep what is cut under our
// control.
const (
	maxTitle       = 255     // an issue title
	maxDescription = 1048576 // an issue description, in characters
	maxNoteBody    = 1000000 // a note body, in characters
	maxFindings    = 200     // rows of the description's findings table
	maxDelta       = 50      // rows of an update note's changes table
	maxPaths       = 20      // attribute paths per finding
	maxCell        = 300     // one address, path, reason or name
)

// incidentKey is what an incident key may be to sit in a hidden marker:
// [a-z0-9-] words joined by single dashes (no "--", which would end an
// HTML comment early).
var incidentKey = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// safeID is a message ID usable as is in a marker.
var safeID = regexp.MustCompile(`^[A-Za-z0-9_.:]+(-[A-Za-z0-9_.:]+)*$`)

// incidentMarker is the hidden line that ties an issue's description to
// an incident key; the notifier finds the issue again by it.
func incidentMarker(key string) string {
	return "<!-- driftwatch:incident=" + key + " -->"
}

// messageMarker is the hidden line that ties a note to the message that
// posted it; a replay of the message finds it and posts no second note.
func messageMarker(id string) string {
	if !safeID.MatchString(id) || len(id) > 200 {
		sum := sha256.Sum256([]byte(id))
		id = "sha256-" + hex.EncodeToString(sum[:16])
	}
	return "<!-- driftwatch:message=" + id + " -->"
}

// checkMessage refuses a message the notifier cannot deliver: a
// permanent error.
func checkMessage(m notify.Message) error {
	if len(m.Incident.Key) > 200 || !incidentKey.MatchString(m.Incident.Key) {
		return fmt.Errorf("incident key %q cannot be an issue marker (want [a-z0-9-], at most 200 characters)", notify.Truncate(m.Incident.Key, 80))
	}
	return m.Check()
}

// issueLabels are the labels of the incident's issue: the configured ones
// and the class label.
func issueLabels(configured []string, c notify.Class) []string {
	out := append([]string{}, configured...)
	return append(out, ClassLabel(c))
}

// issueTitle is the rolling issue's title: stable for the incident key
// (the counts change; they are in the description), so the issue keeps
// one name across updates and incidents.
func issueTitle(in notify.Incident) string {
	return notify.Truncate(notify.OneLine(notify.StableTitle(in.Class, in.Workspace)), maxTitle)
}

// buildDescription is the issue's description for m: the incident's
// status, since when, its run and status page, and its findings table
// (addresses, actions and attribute paths: never values), under the
// hidden incident marker. It replaces the description on every event.
func buildDescription(m notify.Message) string {
	in := m.Incident
	var b strings.Builder
	b.WriteString(incidentMarker(in.Key) + "\n")
	b.WriteString(statusLine(m) + "\n\n")

	b.WriteString("| Workspace | Class | Owner | Incident key |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %s | %s | %s |\n\n", cell(in.Workspace), in.Class, orDash(cell(in.Owner)), cell(in.Key))
	if in.Error != "" {
		fmt.Fprintf(&b, "**Error:** %s\n\n", code(in.Error, maxCell))
	}

	heading := "Findings"
	if m.Event == notify.EventResolve {
		heading = "Resolved findings (as last notified)"
	}
	fmt.Fprintf(&b, "### %s: %s\n\n", heading, notify.CountsText(in.Counts))
	if len(in.Findings) == 0 {
		b.WriteString("No findings listed.\n\n")
	} else {
		b.WriteString("| Kind | Action | Address | Attributes |\n|---|---|---|---|\n")
		for i, f := range in.Findings {
			if i == maxFindings {
				more, noun := len(in.Findings)-maxFindings, "findings"
				if more == 1 {
					noun = "finding"
				}
				fmt.Fprintf(&b, "\n_… and %d more %s: see the status page._\n", more, noun)
				break
			}
			b.WriteString(findingRow(f) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("_driftwatch keeps this issue current: it rewrites this description and comments on every change, " +
		"closes the issue when the incident resolves and reopens it if the same drift comes back. " +
		"Findings list addresses and attribute paths, never values._\n")
	if !m.At.IsZero() {
		fmt.Fprintf(&b, "\n_Last update: %s (%s)._\n", stamp(m.At), m.Event)
	}
	return truncateMarkdown(b.String(), maxDescription)
}

// statusLine is the description's first visible line.
func statusLine(m notify.Message) string {
	in := m.Incident
	var parts []string
	if m.Event == notify.EventResolve {
		s := "**Resolved**"
		if !m.At.IsZero() {
			s += " at " + stamp(m.At)
		}
		if !in.Since.IsZero() {
			s += ", open since " + stamp(in.Since)
			if d := openFor(in.Since, m.At); d != "" {
				s += " (" + d + ")"
			}
		}
		parts = append(parts, s)
	} else {
		s := "**Open**"
		if !in.Since.IsZero() {
			s += " since " + stamp(in.Since)
			if d := openFor(in.Since, m.At); d != "" {
				s += " (" + d + ")"
			}
		}
		parts = append(parts, s)
		sev := "severity **" + string(in.Severity) + "**"
		if in.Escalated > 0 {
			sev += " (raised " + notify.Plural(in.Escalated, "step") + " by failed remediations)"
		}
		parts = append(parts, sev)
	}
	if in.RunID != "" {
		parts = append(parts, "last run "+code(in.RunID, 100))
	}
	if u := linkURL(in.URL); u != "" {
		parts = append(parts, "[status page]("+u+")")
	}
	return strings.Join(parts, " · ")
}

// buildNote is the comment m adds to the issue: one paragraph saying what
// happened (with the status page's link), an update's table of changes,
// and m's hidden marker last. It is "" for an open that creates or finds
// an open issue (the description says it all); reopened says the open
// reopens a closed issue.
func buildNote(m notify.Message, reopened bool) string {
	in := m.Incident
	var b strings.Builder
	switch m.Event {
	case notify.EventOpen:
		if !reopened {
			return ""
		}
		fmt.Fprintf(&b, "**Open again**%s: %s%s. Reopening this issue.", since(in), notify.CountsText(in.Counts), runRef(in))
		if in.Error != "" {
			b.WriteString(" Error: " + code(in.Error, maxCell) + ".")
		}
	case notify.EventUpdate:
		fmt.Fprintf(&b, "**Findings changed**%s: %s. Now %s.", runRef(in), deltaText(m.Delta), notify.CountsText(in.Counts))
	case notify.EventRenotify:
		fmt.Fprintf(&b, "**Still open**%s%s: %s%s.", since(in), paren(openFor(in.Since, m.At)), notify.CountsText(in.Counts), runRef(in))
	case notify.EventRemediation:
		b.WriteString(remediationNote(m))
	case notify.EventResolve:
		fmt.Fprintf(&b, "**Resolved**%s", runRef(in))
		if !in.Since.IsZero() {
			fmt.Fprintf(&b, "; open since %s%s", stamp(in.Since), paren(openFor(in.Since, m.At)))
		}
		b.WriteString(". Closing this issue; driftwatch reopens it if the same drift comes back.")
	}
	if u := linkURL(in.URL); u != "" {
		b.WriteString(" [Status page](" + u + ")")
	}
	if m.Event == notify.EventUpdate {
		b.WriteString(deltaTable(m.Delta))
	}
	b.WriteString("\n\n" + messageMarker(m.ID))
	return truncateMarkdown(b.String(), maxNoteBody)
}

// deltaTable is an update's changes as a table after a blank line ("" if
// there are none).
func deltaTable(d *notify.Delta) string {
	if d == nil || len(d.Added)+len(d.Removed)+len(d.Changed) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n| Change | Kind | Action | Address | Attributes |\n|---|---|---|---|---|\n")
	rows := 0
	for _, part := range d.Parts() {
		for _, f := range part.Findings {
			if rows == maxDelta {
				break
			}
			rows++
			b.WriteString("| " + part.What + " " + findingRow(f) + "\n")
		}
	}
	if total := len(d.Added) + len(d.Removed) + len(d.Changed); total > rows {
		fmt.Fprintf(&b, "\n_… and %d more: see the description or the status page._\n", total-rows)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func remediationNote(m notify.Message) string {
	r, in := m.Remediation, m.Incident
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: %s", r.Result.Title(notify.OneLine), code(r.ID, 100))
	var facts []string
	if r.Mode != "" {
		facts = append(facts, "mode "+code(r.Mode, 20))
	}
	facts = append(facts, "reverts "+notify.Plural(r.Resources, "resource"))
	if r.ApplyRunID != "" {
		facts = append(facts, "apply run "+code(r.ApplyRunID, 100))
	}
	b.WriteString(" (" + strings.Join(facts, ", ") + ").")
	if r.Reason != "" {
		b.WriteString(" Reason: " + code(r.Reason, maxCell) + ".")
	}
	if r.Result == notify.RemediationAwaitingApproval {
		b.WriteString(" Approve with " + code("driftwatch approve "+r.ID, 200))
		if !r.ExpiresAt.IsZero() {
			b.WriteString(" before " + stamp(r.ExpiresAt))
		}
		b.WriteString(".")
	}
	if r.Result.Failed() && in.Escalated > 0 {
		b.WriteString(" Severity raised to **" + string(in.Severity) + "**.")
	}
	if u := linkURL(r.URL); u != "" {
		b.WriteString(" [Apply run](" + u + ")")
	}
	return b.String()
}

// findingRow is a finding as a table row (without the leading "| " of
// the delta table's first column): kind, action, address, attribute
// paths.
func findingRow(f drift.Finding) string {
	action := f.Action
	if action == "" {
		action = "-"
	}
	attrs := notify.Capped(f.Attributes, maxPaths, "and %d more", cell)
	if f.Detail != "" {
		attrs = append(attrs, cell(f.Detail))
	}
	if p := notify.Provenance(f); p != "" {
		attrs = append(attrs, cell(p))
	}
	return fmt.Sprintf("| %s | %s | %s | %s |", f.Kind, cell(action), cell(f.Address), strings.Join(attrs, ", "))
}

func deltaText(d *notify.Delta) string {
	if d == nil {
		return "see the description"
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{len(d.Added), "added"}, {len(d.Removed), "removed"}, {len(d.Changed), "changed"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(parts) == 0 {
		return "see the description"
	}
	return strings.Join(parts, ", ")
}

func since(in notify.Incident) string {
	if in.Since.IsZero() {
		return ""
	}
	return " since " + stamp(in.Since)
}

func runRef(in notify.Incident) string {
	if in.RunID == "" {
		return ""
	}
	return " (run " + code(in.RunID, 100) + ")"
}

// stamp is t in UTC to the minute: "2026-11-03 09:00 UTC".
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// openFor is how long the incident has been open at, to the minute ("" if
// unknown): "45m", "3h 5m", "2d 4h".
func openFor(since, at time.Time) string {
	if since.IsZero() || at.IsZero() || at.Before(since) {
		return ""
	}
	if at.Sub(since) < 30*time.Second {
		return "0m" // where notify.Duration says "under a minute"
	}
	return notify.Duration(at.Sub(since))
}

// code is s on one line, cut to limit, as a Markdown code span: no
// mention, reference, link or HTML in it is rendered.
func code(s string, limit int) string {
	s = notify.Truncate(notify.OneLine(s), limit)
	if s == "" {
		return ""
	}
	return notify.CodeSpan(s)
}

// cell is code(s) for a table cell, where a pipe must be escaped even in
// a code span.
func cell(s string) string {
	return strings.ReplaceAll(code(s, maxCell), "|", `\|`)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// linkURL is u as a Markdown link destination, or "" if it is not an
// absolute http(s) URL without spaces or angle brackets.
func linkURL(u string) string {
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return ""
	}
	if strings.ContainsAny(u, " \t\r\n<>\"`") {
		return ""
	}
	return strings.NewReplacer("(", "%28", ")", "%29").Replace(u)
}

// truncateMarkdown cuts s to limit characters, keeping the final line (a
// hidden marker) when it cuts.
func truncateMarkdown(s string, limit int) string {
	if len([]rune(s)) <= limit {
		return s
	}
	i := strings.LastIndex(s, "\n")
	tail := s[i:]
	note := "\n\n_… cut to fit GitLab's size limit: see the status page._\n"
	keep := limit - len([]rune(tail)) - len([]rune(note))
	return string([]rune(s)[:keep]) + note + tail
}
