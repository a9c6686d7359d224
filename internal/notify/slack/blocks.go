package slack

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Slack's limits (api.slack.com/reference/block-kit) and our margins under
// them. The library enforces none of them; a message over a limit is
// rejected whole (invalid_blocks, msg_blocks_too_long), so the builders
// truncate instead and never fail.
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxHeaderText  = 150
	maxFieldText   = 2000
	maxFields      = 10
	// maxTotalText bounds the text of all blocks together: Slack answers
	// msg_blocks_too_long at about 13k characters (undocumented).
	maxTotalText    = 11000
	maxFallbackText = 300

	maxFindingsListed   = 20 // status view: the rest are counted
	maxDeltaListed      = 10 // per added/removed/changed group
	maxAttributesListed = 5
	maxAddressRunes     = 200
	maxAttributeRunes   = 100
	maxErrorRunes       = 1000
	moreReserve         = 40 // room kept for the "…and N more" line
)

// group is a titled list of finding lines for the packer.
type group struct {
	title string   // mrkdwn, may be empty
	lines []string // one finding each
	more  int      // findings of this group left out before packing
}

// buildBlocks is the status view of an incident: the bot's parent message
// (updated in place) and the body of webhook messages. Header with class,
// workspace and severity emoji; severity, owner, since, status and counts;
// the error of an errored incident; the top findings (addresses, actions,
// attribute paths, never values); a context line with the run ID and a link
// to the status page. Within Slack's limits whatever the input.
func buildBlocks(m notify.Message) []slackgo.Block {
	var groups []group
	if m.Event != notify.EventResolve {
		groups = findingGroups(m.Incident.Findings, maxFindingsListed)
	}
	return compose(statusHead(m, false, len(groups) > 0), groups, contextBlocks(m))
}

// buildWebhookBlocks is one self-contained message per transition: the
// status view with the event in the header and, for an update, what
// changed before the current findings.
func buildWebhookBlocks(m notify.Message) []slackgo.Block {
	var groups []group
	if m.Event == notify.EventUpdate {
		groups = append(groups, deltaGroups(m.Delta)...)
	}
	if m.Event != notify.EventResolve {
		groups = append(groups, findingGroups(m.Incident.Findings, maxFindingsListed)...)
	}
	head := statusHead(m, true, len(groups) > 0)
	if m.Event == notify.EventRemediation {
		// What happened first, under the header; the status follows.
		head = append([]slackgo.Block{head[0], section(remediationSection(m))}, head[1:]...)
	}
	return compose(head, groups, contextBlocks(m))
}

// buildThreadBlocks is the thread reply for an update, renotify, resolve
// or remediation: what changed, not the whole status (the parent has that).
func buildThreadBlocks(m notify.Message) []slackgo.Block {
	head := []slackgo.Block{section(threadSummary(m))}
	if m.Incident.Class == notify.ClassErrored && m.Incident.Error != "" && m.Event != notify.EventResolve {
		head = append(head, errorSection(m.Incident.Error))
	}
	var groups []group
	if m.Event == notify.EventUpdate {
		groups = deltaGroups(m.Delta)
	}
	return compose(head, groups, contextBlocks(m))
}

// buildText is the top-level text: what notifications and screen readers
// show. Short, no emoji shortcodes.
func buildText(m notify.Message) string {
	inc := m.Incident
	subject := classTitle(inc.Class) + " in " + inc.Workspace
	var s string
	switch m.Event {
	case notify.EventResolve:
		s = "Resolved: " + subject
		if d := openFor(m); d != "" {
			s += " after " + d
		}
	case notify.EventRenotify:
		s = fmt.Sprintf("[%s] Still open: %s", inc.Severity, subject)
		if d := openFor(m); d != "" {
			s += " for " + d
		}
	case notify.EventUpdate:
		s = fmt.Sprintf("[%s] %s changed", inc.Severity, subject)
		if d := deltaSummary(m.Delta); d != "" {
			s += ": " + d
		}
	case notify.EventRemediation:
		s = fmt.Sprintf("[%s] %s: %s", inc.Severity, subject, remediationText(m))
	default:
		s = fmt.Sprintf("[%s] %s", inc.Severity, subject)
		if c := countsText(inc.Counts); c != "" && inc.Class != notify.ClassErrored {
			s += ": " + c
		}
	}
	if inc.Class == notify.ClassErrored && inc.Error != "" && m.Event != notify.EventResolve {
		s += ": " + notify.OneLine(inc.Error)
	}
	return esc(notify.Truncate(s, maxFallbackText))
}

// buildThreadText is the top-level text of a thread reply.
func buildThreadText(m notify.Message) string {
	switch m.Event {
	case notify.EventResolve:
		if d := openFor(m); d != "" {
			return "Resolved after " + d
		}
		return "Resolved"
	case notify.EventRenotify:
		if d := openFor(m); d != "" {
			return esc(notify.Truncate("Still open after "+d+": "+classTitle(m.Incident.Class)+" in "+m.Incident.Workspace, maxFallbackText))
		}
		return "Still open"
	case notify.EventUpdate:
		if d := deltaSummary(m.Delta); d != "" {
			return "Findings changed: " + d
		}
		return "Findings changed"
	case notify.EventRemediation:
		return esc(notify.Truncate(remediationText(m), maxFallbackText))
	}
	return esc(notify.Truncate(buildText(m), maxFallbackText))
}

// statusHead is the header, the fields and the error; a divider follows
// when a list does.
func statusHead(m notify.Message, withEvent, list bool) []slackgo.Block {
	inc := m.Incident
	blocks := []slackgo.Block{
		slackgo.NewHeaderBlock(slackgo.NewTextBlockObject(slackgo.PlainTextType, headerText(m, withEvent), true, false)),
	}
	fields := []*slackgo.TextBlockObject{
		field("Severity", severityEmoji(inc.Severity)+" "+esc(string(inc.Severity))),
		field("Owner", orDash(esc(notify.Truncate(notify.OneLine(inc.Owner), 200)))),
		field("Since", slackDate(inc.Since)),
		field("Status", statusText(m)),
	}
	switch {
	case inc.Class == notify.ClassErrored:
	case m.Event == notify.EventResolve:
		fields = append(fields, field("Last findings", orDash(countsText(inc.Counts))))
	default:
		fields = append(fields, field("Findings", orDash(countsText(inc.Counts))))
	}
	blocks = append(blocks, slackgo.NewSectionBlock(nil, fields[:min(len(fields), maxFields)], nil))
	if inc.Error != "" && m.Event != notify.EventResolve {
		blocks = append(blocks, errorSection(inc.Error))
	}
	if list {
		blocks = append(blocks, slackgo.NewDividerBlock())
	}
	return blocks
}

func headerText(m notify.Message, withEvent bool) string {
	inc := m.Incident
	prefix, suffix := severityEmoji(inc.Severity)+" ", ""
	class := classTitle(inc.Class)
	switch {
	case m.Event == notify.EventResolve:
		prefix = ":white_check_mark: Resolved: "
	case withEvent && m.Event == notify.EventUpdate:
		suffix = " (changed)"
	case withEvent && m.Event == notify.EventRenotify:
		prefix += "Still open: "
	case withEvent && m.Event == notify.EventRemediation:
		prefix += remediationTitle(m.Remediation) + ": "
	}
	fixed := prefix + class + " in " + suffix
	ws := notify.Truncate(notify.OneLine(inc.Workspace), maxHeaderText-utf8.RuneCountInString(fixed))
	return prefix + class + " in " + ws + suffix
}

func statusText(m notify.Message) string {
	d := openFor(m)
	switch {
	case m.Event == notify.EventResolve && d != "":
		return "Resolved after " + d
	case m.Event == notify.EventResolve:
		return "Resolved"
	}
	s := "Open"
	if d != "" {
		s = "Open for " + d
	}
	if m.Incident.Escalated > 0 {
		s += " · remediation failed"
	}
	return s
}

func threadSummary(m notify.Message) string {
	d := openFor(m)
	switch m.Event {
	case notify.EventResolve:
		if d != "" {
			return ":white_check_mark: *Resolved* after " + d + "."
		}
		return ":white_check_mark: *Resolved*."
	case notify.EventRenotify:
		s := ":alarm_clock: *Still open*"
		if d != "" {
			s += " after " + d
		}
		if c := countsText(m.Incident.Counts); c != "" {
			s += " · " + c
		}
		return s + "."
	case notify.EventUpdate:
		s := "*Findings changed*"
		if ds := deltaSummary(m.Delta); ds != "" {
			s += " · " + ds
		}
		if c := countsText(m.Incident.Counts); c != "" {
			s += " · now " + c
		}
		return s + "."
	case notify.EventRemediation:
		return remediationSection(m)
	}
	return esc(buildText(m))
}

func errorSection(msg string) *slackgo.SectionBlock {
	msg = strings.ReplaceAll(notify.Truncate(strings.TrimSpace(msg), maxErrorRunes), "```", "'''")
	return section(":warning: *Error*\n```" + esc(msg) + "```")
}

func contextBlocks(m notify.Message) []slackgo.Block {
	parts := []string{"driftwatch"}
	if m.Incident.RunID != "" {
		parts = append(parts, "run "+codeSpan(m.Incident.RunID, 100))
	}
	if m.Incident.Key != "" {
		parts = append(parts, "incident "+codeSpan(m.Incident.Key, 100))
	}
	if u := linkURL(m.Incident.URL); u != "" {
		parts = append(parts, "<"+u+"|Open status page>")
	}
	text := slackgo.NewTextBlockObject(slackgo.MarkdownType, strings.Join(parts, " · "), false, false)
	return []slackgo.Block{slackgo.NewContextBlock("", text)}
}

// linkURL returns u if it can sit inside a <url|text> link: http(s), no
// characters that end the link early, not too long.
func linkURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" || len(u) > 1000 ||
		strings.ContainsAny(u, "|<> \n") {
		return ""
	}
	return strings.ReplaceAll(u, "&", "&amp;")
}

func findingGroups(fs []drift.Finding, limit int) []group {
	var groups []group
	for _, f := range fs {
		if len(groups) == 0 || groups[len(groups)-1].title != kindTitle(f.Kind) {
			groups = append(groups, group{title: kindTitle(f.Kind)})
		}
		g := &groups[len(groups)-1]
		if limit > 0 {
			g.lines = append(g.lines, findingLine(f))
			limit--
		} else {
			g.more++
		}
	}
	return groups
}

func deltaGroups(d *notify.Delta) []group {
	if d == nil {
		return nil
	}
	mk := func(title string, fs []drift.Finding) group {
		g := group{title: fmt.Sprintf("*%s (%d)*", title, len(fs))}
		for i, f := range fs {
			if i >= maxDeltaListed {
				g.more = len(fs) - i
				break
			}
			g.lines = append(g.lines, findingLine(f))
		}
		return g
	}
	var gs []group
	if len(d.Added) > 0 {
		gs = append(gs, mk("Added", d.Added))
	}
	if len(d.Removed) > 0 {
		gs = append(gs, mk("Removed", d.Removed))
	}
	if len(d.Changed) > 0 {
		gs = append(gs, mk("Changed", d.Changed))
	}
	return gs
}

// findingLine is one finding: address, action and attribute paths (never
// values), each capped so that one line stays far below a section's limit.
func findingLine(f drift.Finding) string {
	var b strings.Builder
	b.WriteString("• ")
	b.WriteString(codeSpan(orUnknown(f.Address), maxAddressRunes))
	if f.Kind == drift.KindForbidden {
		b.WriteString(" _forbidden type_ ")
		b.WriteString(codeSpan(orUnknown(f.Type), maxAttributeRunes))
		if len(f.SeenIn) > 0 {
			b.WriteString(" (in " + esc(notify.Truncate(strings.Join(f.SeenIn, ", "), 100)) + ")")
		}
		return b.String()
	}
	if f.Action != "" {
		b.WriteString(" _" + esc(notify.Truncate(notify.OneLine(f.Action), 40)) + "_")
	}
	if len(f.Attributes) > 0 {
		b.WriteString(": ")
		for i, a := range f.Attributes {
			if i == maxAttributesListed {
				fmt.Fprintf(&b, " +%d more", len(f.Attributes)-i)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(codeSpan(a, maxAttributeRunes))
		}
	}
	return b.String()
}

// compose packs the groups' lines into sections between head and tail so
// that every section, the block count and the total text stay within
// Slack's limits; what does not fit is counted in a final "…and N more".
func compose(head []slackgo.Block, groups []group, tail []slackgo.Block) []slackgo.Block {
	budget := maxTotalText - moreReserve
	for _, b := range head {
		budget -= blockTextLen(b)
	}
	for _, b := range tail {
		budget -= blockTextLen(b)
	}
	slots := maxBlocks - len(head) - len(tail)

	var sections []string
	var cur strings.Builder
	curLen, omitted, stopped := 0, 0, false
	add := func(piece string) bool {
		n := utf8.RuneCountInString(piece)
		if curLen > 0 {
			n++ // the newline
		}
		if n > budget {
			return false
		}
		if curLen > 0 && curLen+n > maxSectionText-moreReserve {
			if len(sections)+2 > slots {
				return false
			}
			sections = append(sections, cur.String())
			cur.Reset()
			curLen = 0
			n = utf8.RuneCountInString(piece)
		}
		if curLen > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(piece)
		curLen += n
		budget -= n
		return true
	}
	for _, g := range groups {
		if stopped || slots < 1 {
			omitted += len(g.lines) + g.more
			continue
		}
		for i, line := range g.lines {
			piece := line
			if i == 0 && g.title != "" {
				piece = g.title + "\n" + line
			}
			if !add(piece) {
				stopped = true
				omitted += len(g.lines) - i
				break
			}
		}
		omitted += g.more
	}
	if omitted > 0 && slots >= 1 {
		more := fmt.Sprintf("_…and %d more_", omitted)
		if curLen > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(more) // fits: moreReserve was kept in the section and the budget
		curLen++
	}
	if curLen > 0 {
		sections = append(sections, cur.String())
	}
	out := make([]slackgo.Block, 0, len(head)+len(sections)+len(tail))
	out = append(out, head...)
	for _, s := range sections {
		out = append(out, section(s))
	}
	return append(out, tail...)
}

// blockTextLen is the number of characters of text in a block, as the
// aggregate limit counts them.
func blockTextLen(b slackgo.Block) int {
	n := 0
	count := func(t *slackgo.TextBlockObject) {
		if t != nil {
			n += utf8.RuneCountInString(t.Text)
		}
	}
	switch b := b.(type) {
	case *slackgo.HeaderBlock:
		count(b.Text)
	case *slackgo.SectionBlock:
		count(b.Text)
		for _, f := range b.Fields {
			count(f)
		}
	case *slackgo.ContextBlock:
		for _, e := range b.ContextElements.Elements {
			if t, ok := e.(*slackgo.TextBlockObject); ok {
				count(t)
			}
		}
	}
	return n
}

func section(text string) *slackgo.SectionBlock {
	return slackgo.NewSectionBlock(slackgo.NewTextBlockObject(slackgo.MarkdownType, notify.Truncate(text, maxSectionText), false, false), nil, nil)
}

func field(name, value string) *slackgo.TextBlockObject {
	return slackgo.NewTextBlockObject(slackgo.MarkdownType, notify.Truncate("*"+name+"*\n"+value, maxFieldText), false, false)
}

func kindTitle(k drift.Kind) string {
	switch k {
	case drift.KindForbidden:
		return "*Forbidden resource types*"
	case drift.KindDrift:
		return "*Drifted (changed outside Terraform)*"
	case drift.KindPending:
		return "*Pending (not applied)*"
	case drift.KindNoise:
		return "*Noise*"
	}
	return "*" + esc(notify.Truncate(string(k), 50)) + "*"
}

func classTitle(c notify.Class) string {
	switch c {
	case notify.ClassDrift:
		return "Drift"
	case notify.ClassForbidden:
		return "Forbidden resource types"
	case notify.ClassErrored:
		return "Failing runs"
	}
	return notify.Truncate(notify.OneLine(string(c)), 40)
}

func severityEmoji(s notify.Severity) string {
	switch s {
	case notify.SeverityCritical:
		return ":rotating_light:"
	case notify.SeverityHigh:
		return ":red_circle:"
	case notify.SeverityModerate:
		return ":large_orange_circle:"
	case notify.SeverityLow:
		return ":large_yellow_circle:"
	case notify.SeverityInfo:
		return ":large_blue_circle:"
	}
	return ":grey_question:"
}

func countsText(c drift.Counts) string {
	var parts []string
	if c.Forbidden > 0 {
		parts = append(parts, fmt.Sprintf("%d forbidden", c.Forbidden))
	}
	if c.Drift > 0 {
		parts = append(parts, fmt.Sprintf("%d drifted", c.Drift))
	}
	if c.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending", c.Pending))
	}
	return strings.Join(parts, " · ")
}

func deltaSummary(d *notify.Delta) string {
	if d == nil {
		return ""
	}
	var parts []string
	if n := len(d.Added); n > 0 {
		parts = append(parts, fmt.Sprintf("%d added", n))
	}
	if n := len(d.Removed); n > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", n))
	}
	if n := len(d.Changed); n > 0 {
		parts = append(parts, fmt.Sprintf("%d changed", n))
	}
	return strings.Join(parts, ", ")
}

// openFor is how long the incident has been open at the message's time, or
// "" when either time is unknown.
func openFor(m notify.Message) string {
	if m.Incident.Since.IsZero() || m.At.IsZero() || m.At.Before(m.Incident.Since) {
		return ""
	}
	return humanDuration(m.At.Sub(m.Incident.Since))
}

// humanDuration renders d coarsely: "45m", "3h", "3h 5m", "2d 4h".
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh %dm", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd %dh", days, h)
}

// slackDate renders t in each reader's time zone, with a UTC fallback for
// clients that cannot (api.slack.com/reference/surfaces/formatting#date-formatting).
func slackDate(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// esc escapes the three characters Slack's mrkdwn treats as control
// characters, so names cannot inject mentions or links.
func esc(s string) string { return mrkdwnEscaper.Replace(s) }

// codeSpan renders s as inline code: one line, capped, backticks replaced
// (they would end the span), escaped.
func codeSpan(s string, limit int) string {
	return "`" + esc(notify.Truncate(strings.ReplaceAll(notify.OneLine(s), "`", "'"), limit)) + "`"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
