package slack

import (
	"fmt"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

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
	case drift.KindUnmanaged:
		return "*Unmanaged (in no workspace's state)*"
	case drift.KindManagedTwice:
		return "*Managed twice (in two or more workspaces' states)*"
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

// humanDuration renders d coarsely: "45m", "3h", "3h 5m", "2d 4h"; cut,
// not rounded, to the minute, as Slack messages have always shown it.
func humanDuration(d time.Duration) string { return notify.Duration(d.Truncate(time.Minute)) }

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
