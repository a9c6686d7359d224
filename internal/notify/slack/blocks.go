package slack

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

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
func buildWebhookBlocks(m notify.Message) []slackgo.Block { return webhookBlocks(m, nil) }

// webhookBlocks is buildWebhookBlocks with actions (the Approve / Reject
// buttons, or none) right under the remediation section.
func webhookBlocks(m notify.Message, actions []slackgo.Block) []slackgo.Block {
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
		first := append([]slackgo.Block{head[0], section(remediationSection(m))}, actions...)
		head = append(first, head[1:]...)
	}
	return compose(head, groups, contextBlocks(m))
}

// buildThreadBlocks is the thread reply for an update, renotify, resolve
// or remediation: what changed, not the whole status (the parent has that).
func buildThreadBlocks(m notify.Message) []slackgo.Block { return threadBlocks(m, nil) }

// threadBlocks is buildThreadBlocks with actions (the Approve / Reject
// buttons, or none) right under the summary.
func threadBlocks(m notify.Message, actions []slackgo.Block) []slackgo.Block {
	head := append([]slackgo.Block{section(threadSummary(m))}, actions...)
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
		return notify.StatusText(m, openFor(m))
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
	s := notify.StatusText(m, openFor(m))
	if m.Event != notify.EventResolve && m.Incident.Escalated > 0 {
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

func section(text string) *slackgo.SectionBlock {
	return slackgo.NewSectionBlock(slackgo.NewTextBlockObject(slackgo.MarkdownType, notify.Truncate(text, maxSectionText), false, false), nil, nil)
}

func field(name, value string) *slackgo.TextBlockObject {
	return slackgo.NewTextBlockObject(slackgo.MarkdownType, notify.Truncate("*"+name+"*\n"+value, maxFieldText), false, false)
}
