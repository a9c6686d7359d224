package teams

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Teams' limit on a message and our own bounds, which keep what is cut
// under our control.
const (
	// maxPayload bounds the encoded request body. Teams refuses a message
	// over about 28 KB; Workflows accepts the request (202) before its
	// "post card" action fails, so a card over the limit would be lost
	// without an error. The margin covers what the flow adds around the
	// card.
	maxPayload = 24 * 1024

	maxTitle      = 300  // the card's title
	maxValue      = 300  // a fact's value
	maxReason     = 1000 // an error or a remediation's reason
	maxAddress    = 300  // one address
	maxPath       = 100  // one attribute path
	maxPaths      = 10   // attribute paths per finding
	maxFindings   = 50   // findings listed before the size cut
	maxDeltaLines = 30   // delta entries listed before the size cut
)

// Adaptive Card constants.
const (
	contentType   = "application/vnd.microsoft.card.adaptive"
	cardSchema    = "http://adaptivecards.io/schemas/adaptive-card.json"
	cardVersion   = "1.4"
	timeLayout    = "2006-01-02 15:04 UTC"
	monospaceFont = "Monospace"
)

// payload is the request body: a message with one Adaptive Card
// attachment, as the Workflows trigger expects.
type payload struct {
	Type        string       `json:"type"`
	Attachments []attachment `json:"attachments"`
}

type attachment struct {
	ContentType string `json:"contentType"`
	// ContentURL is always null: the card is inline.
	ContentURL *string `json:"contentUrl"`
	Content    card    `json:"content"`
}

// card is an Adaptive Card.
type card struct {
	Schema  string    `json:"$schema"`
	Type    string    `json:"type"`
	Version string    `json:"version"`
	MSTeams msteams   `json:"msteams"`
	Body    []element `json:"body"`
	Actions []action  `json:"actions,omitempty"`
}

// msteams is the Teams-only card property: full width, so findings are
// not squeezed into a narrow bubble.
type msteams struct {
	Width string `json:"width"`
}

// element is one card element: a TextBlock, RichTextBlock, FactSet or
// Container (Type says which; unused fields stay empty).
type element struct {
	Type      string    `json:"type"`
	Text      string    `json:"text,omitempty"`
	Size      string    `json:"size,omitempty"`
	Weight    string    `json:"weight,omitempty"`
	Color     string    `json:"color,omitempty"`
	IsSubtle  bool      `json:"isSubtle,omitempty"`
	Wrap      bool      `json:"wrap,omitempty"`
	Spacing   string    `json:"spacing,omitempty"`
	Separator bool      `json:"separator,omitempty"`
	Style     string    `json:"style,omitempty"`
	Bleed     bool      `json:"bleed,omitempty"`
	Items     []element `json:"items,omitempty"`
	Facts     []fact    `json:"facts,omitempty"`
	Inlines   []textRun `json:"inlines,omitempty"`
}

// textRun is an inline of a RichTextBlock. Its text is shown as is (no
// Markdown), which is why addresses and names go in text runs.
type textRun struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Size     string `json:"size,omitempty"`
	Weight   string `json:"weight,omitempty"`
	Color    string `json:"color,omitempty"`
	FontType string `json:"fontType,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
}

type fact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

type action struct {
	Type  string `json:"type"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

// buildCard is m's card without its finding lists (encode adds them, cut
// to fit): one self-contained card per message (open, update, renotify,
// remediation, resolve), a pure function of m so that a resent message
// posts an identical card.
func buildCard(m notify.Message) (card, error) {
	if err := m.Check(); err != nil {
		return card{}, err
	}
	in := m.Incident
	c := card{Schema: cardSchema, Type: "AdaptiveCard", Version: cardVersion, MSTeams: msteams{Width: "Full"}}

	label, style := eventLabel(m)
	c.Body = append(c.Body, element{
		Type: "Container", Style: style, Bleed: true,
		Items: []element{
			{Type: "TextBlock", Text: label, Size: "Small", Weight: "Bolder", Color: styleColor(style), Wrap: true},
			{Type: "RichTextBlock", Inlines: []textRun{{Type: "TextRun", Text: notify.Truncate(notify.OneLine(notify.Title(in)), maxTitle), Size: "Large", Weight: "Bolder"}}},
		},
	})
	c.Body = append(c.Body, element{Type: "FactSet", Facts: incidentFacts(m)})

	if m.Event == notify.EventRemediation {
		c.Body = append(c.Body, heading("Remediation"), element{Type: "FactSet", Facts: remediationFacts(m.Remediation)})
		if r := m.Remediation; r.Result == notify.RemediationAwaitingApproval {
			c.Body = append(c.Body, element{Type: "RichTextBlock", Inlines: []textRun{
				{Type: "TextRun", Text: "Approve with "},
				{Type: "TextRun", Text: "driftwatch approve " + notify.OneLine(r.ID), FontType: monospaceFont},
			}})
		}
	}

	if in.URL != "" {
		c.Actions = append(c.Actions, action{Type: "Action.OpenUrl", Title: "Open in driftwatch", URL: in.URL})
	}
	if r := m.Remediation; m.Event == notify.EventRemediation && r.URL != "" {
		c.Actions = append(c.Actions, action{Type: "Action.OpenUrl", Title: "Open remediation run", URL: r.URL})
	}
	return c, nil
}

// lists are the card's finding lists, cut to fit by encode.
type lists struct {
	delta    []element // update only: what changed
	deltaN   int       // delta entries in all
	findings []element
	total    int // findings in all
	more     string
}

// buildLists is m's finding lines: an update's delta, then the current
// findings (none on resolve), each within its own bound.
func buildLists(m notify.Message) lists {
	var l lists
	if d := m.Delta; m.Event == notify.EventUpdate && d != nil {
		for _, g := range []struct {
			verb string
			fs   []drift.Finding
		}{{"Added", d.Added}, {"Removed", d.Removed}, {"Changed", d.Changed}} {
			for _, f := range g.fs {
				if len(l.delta) < maxDeltaLines {
					l.delta = append(l.delta, findingLine(g.verb, f))
				}
				l.deltaN++
			}
		}
	}
	if m.Event != notify.EventResolve {
		for i, f := range m.Incident.Findings {
			if i == maxFindings {
				break
			}
			l.findings = append(l.findings, findingLine("", f))
		}
		l.total = len(m.Incident.Findings)
	}
	if m.Incident.URL != "" {
		l.more = " (see the status page)"
	}
	return l
}

// body is the card with the first nd delta lines and nf findings listed,
// each list followed by a line counting what was left out.
func (l lists) body(c card, nd, nf int) card {
	out := c
	out.Body = append([]element(nil), c.Body[:2]...)
	if l.deltaN > 0 {
		out.Body = append(out.Body, heading("What changed"))
		out.Body = append(out.Body, l.delta[:nd]...)
		switch left := l.deltaN - nd; {
		case nd == 0:
			out.Body = append(out.Body, moreLine(plural(left, "change")+" not listed"+l.more))
		case left > 0:
			out.Body = append(out.Body, moreLine(andMore(left, "change")+l.more))
		}
	}
	out.Body = append(out.Body, c.Body[2:]...)
	if l.total > 0 {
		title := "Findings"
		if nf > 0 && nf < l.total {
			title = fmt.Sprintf("Findings (top %d of %d)", nf, l.total)
		}
		out.Body = append(out.Body, heading(title))
		out.Body = append(out.Body, l.findings[:nf]...)
		switch left := l.total - nf; {
		case nf == 0:
			out.Body = append(out.Body, moreLine(plural(left, "finding")+" not listed"+l.more))
		case left > 0:
			out.Body = append(out.Body, moreLine(andMore(left, "finding")+l.more))
		}
	}
	return out
}

// encode is the request body for m within maxPayload: lines are cut from
// the end of the longer of the two lists (the delta's, the findings'),
// each cut counted in an "…and N more" line.
func encode(m notify.Message) ([]byte, error) {
	c, err := buildCard(m)
	if err != nil {
		return nil, err
	}
	l := buildLists(m)
	nd, nf := len(l.delta), len(l.findings)
	for {
		b, err := json.Marshal(wrap(l.body(c, nd, nf)))
		if err != nil {
			return nil, err
		}
		if len(b) <= maxPayload {
			return b, nil
		}
		// The longer list loses its last line: on an update both what
		// changed and the current findings keep some lines.
		switch {
		case nf > 0 && nf >= nd:
			nf--
		case nd > 0:
			nd--
		default:
			return nil, errors.New("card too large for Teams even without its findings")
		}
	}
}

// wrap is the Workflows request for c.
func wrap(c card) payload {
	return payload{Type: "message", Attachments: []attachment{{ContentType: contentType, Content: c}}}
}

// eventLabel is the line above the title, and the colour of the card's
// head: attention for critical and high, warning for moderate and low,
// accent for info; good for a resolve or an applied remediation.
func eventLabel(m notify.Message) (string, string) {
	style := severityStyle(m.Incident.Severity)
	sev := strings.ToUpper(string(m.Incident.Severity))
	switch m.Event {
	case notify.EventUpdate:
		return sev + " · Findings changed", style
	case notify.EventRenotify:
		return sev + " · Still open", style
	case notify.EventResolve:
		return "Resolved", "good"
	case notify.EventRemediation:
		r := m.Remediation.Result
		switch {
		case r == notify.RemediationApplied:
			style = "good"
		case r.Failed():
			style = "attention"
		}
		return sev + " · " + r.Title(notify.OneLine), style
	}
	return sev + " · New incident", style
}

func severityStyle(s notify.Severity) string {
	switch s {
	case notify.SeverityModerate, notify.SeverityLow:
		return "warning"
	case notify.SeverityInfo:
		return "accent"
	}
	// critical, high, and anything unknown: a gap never looks harmless.
	return "attention"
}

// styleColor is the TextBlock colour matching a container style.
func styleColor(style string) string {
	switch style {
	case "good":
		return "Good"
	case "warning":
		return "Warning"
	case "accent":
		return "Accent"
	}
	return "Attention"
}

// incidentFacts are the incident's severity, workspace, class, owner,
// since, status, counts, run and error.
func incidentFacts(m notify.Message) []fact {
	in := m.Incident
	sev := string(in.Severity)
	if in.Escalated > 0 {
		sev += fmt.Sprintf(" (raised %s by failed remediations)", plural(in.Escalated, "step"))
	}
	fs := []fact{
		{"Severity", value(sev, maxValue)},
		{"Workspace", value(in.Workspace, maxValue)},
		{"Class", value(string(in.Class), maxValue)},
	}
	if in.Owner != "" {
		fs = append(fs, fact{"Owner", value(in.Owner, maxValue)})
	}
	if !in.Since.IsZero() {
		fs = append(fs, fact{"Since", in.Since.UTC().Format(timeLayout)})
	}
	fs = append(fs, fact{"Status", statusText(m)})
	if in.Class != notify.ClassErrored {
		title := "Findings"
		if m.Event == notify.EventResolve {
			title = "Last findings"
		}
		fs = append(fs, fact{title, countsText(in)})
	}
	if in.RunID != "" {
		fs = append(fs, fact{"Run", value(in.RunID, maxValue)})
	}
	if in.Error != "" && m.Event != notify.EventResolve {
		fs = append(fs, fact{"Error", value(in.Error, maxReason)})
	}
	return fs
}

func remediationFacts(r *notify.Remediation) []fact {
	fs := []fact{{"ID", value(r.ID, maxValue)}, {"Result", value(string(r.Result), maxValue)}}
	if r.Mode != "" {
		fs = append(fs, fact{"Mode", value(r.Mode, maxValue)})
	}
	fs = append(fs, fact{"Resources", plural(r.Resources, "resource")})
	if r.Reason != "" {
		fs = append(fs, fact{"Reason", value(r.Reason, maxReason)})
	}
	if r.ApplyRunID != "" {
		fs = append(fs, fact{"Apply run", value(r.ApplyRunID, maxValue)})
	}
	if !r.ExpiresAt.IsZero() {
		fs = append(fs, fact{"Expires", r.ExpiresAt.UTC().Format(timeLayout)})
	}
	return fs
}

// statusText is how long the incident has been open (at the message's
// time), or how long it was open when resolved.
func statusText(m notify.Message) string {
	d := ""
	if !m.Incident.Since.IsZero() && !m.At.IsZero() && m.At.After(m.Incident.Since) {
		d = notify.Duration(m.At.Sub(m.Incident.Since))
	}
	return notify.StatusText(m, d)
}

func countsText(in notify.Incident) string {
	if in.Class == notify.ClassForbidden {
		return fmt.Sprintf("%d forbidden", in.Counts.Forbidden)
	}
	return fmt.Sprintf("%d drifted, %d pending", in.Counts.Drift, in.Counts.Pending)
}

// findingLine is one finding: "[verb] action address · paths · seen in",
// in text runs (addresses are shown as they are, in monospace).
func findingLine(verb string, f drift.Finding) element {
	var runs []textRun
	if verb != "" {
		runs = append(runs, textRun{Type: "TextRun", Text: verb + " ", Weight: "Bolder"})
	}
	// "update", or "pending create": drift is the usual kind, the others
	// are named.
	act := notify.OneLine(f.Action)
	if f.Kind != "" && f.Kind != drift.KindDrift {
		act = strings.TrimSpace(string(f.Kind) + " " + act)
	}
	runs = append(runs,
		textRun{Type: "TextRun", Text: notify.Truncate(act, 40) + " ", Weight: "Bolder"},
		textRun{Type: "TextRun", Text: notify.Truncate(notify.OneLine(f.Address), maxAddress), FontType: monospaceFont},
	)
	var tail []string
	if len(f.Attributes) > 0 {
		ps := notify.Capped(f.Attributes, maxPaths, "+%d more", func(a string) string { return notify.Truncate(notify.OneLine(a), maxPath) })
		tail = append(tail, strings.Join(ps, ", "))
	}
	if len(f.SeenIn) > 0 {
		tail = append(tail, "seen in "+notify.Truncate(notify.OneLine(strings.Join(f.SeenIn, ", ")), maxValue))
	}
	if f.Detail != "" {
		tail = append(tail, notify.Truncate(notify.OneLine(f.Detail), maxValue))
	}
	if p := notify.Provenance(f); p != "" {
		tail = append(tail, p)
	}
	if len(tail) > 0 {
		runs = append(runs, textRun{Type: "TextRun", Text: " · " + strings.Join(tail, " · "), IsSubtle: true})
	}
	return element{Type: "RichTextBlock", Inlines: runs}
}

func heading(s string) element {
	return element{Type: "TextBlock", Text: s, Weight: "Bolder", Separator: true, Spacing: "Medium", Wrap: true}
}

func moreLine(s string) element {
	return element{Type: "TextBlock", Text: s, IsSubtle: true, Wrap: true}
}

// value is s for a fact: one line, bounded, with Markdown escaped (fact
// values are rendered as Markdown).
func value(s string, limit int) string {
	return escapeMarkdown(notify.Truncate(notify.OneLine(s), limit))
}

// markdownEscaper backslash-escapes what Teams' Adaptive Card Markdown
// would turn into emphasis, links or code: a workspace "team_a_b" stays
// team_a_b, not team with "a" in italics.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, `*`, `\*`, `_`, `\_`, "`", "\\`", `[`, `\[`, `]`, `\]`, `~`, `\~`,
)

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

func plural(n int, noun string) string { return notify.Plural(n, noun) }

// andMore is "…and 1 more finding", "…and 3 more findings".
func andMore(n int, noun string) string {
	return "…and " + strings.Replace(plural(n, noun), " ", " more ", 1)
}
