package notify

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// OneLine joins s's lines and collapses its whitespace: for a field that
// must stay on one line (a Slack code span, an OpsGenie message).
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Truncate cuts s to at most limit runes, ending in "…" when cut (limit <= 0:
// "").
func Truncate(s string, limit int) string {
	if limit <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}

// Title is an incident's one-line title, as pagers show it: "Terraform
// drift in WS: 2 drifted, 1 pending", "Forbidden resource types in WS: 1
// resource", "Checks failing in WS: 1 check" or "Drift checks failing for
// WS: REASON".
func Title(in Incident) string {
	switch in.Class {
	case ClassErrored:
		s := "Drift checks failing for " + in.Workspace
		if in.Error != "" {
			s += ": " + OneLine(in.Error)
		}
		return s
	case ClassForbidden:
		return fmt.Sprintf("Forbidden resource types in %s: %s", in.Workspace, Plural(in.Counts.Forbidden, "resource"))
	case ClassValidation:
		return fmt.Sprintf("Checks failing in %s: %s", in.Workspace, Plural(in.Counts.Check, "check"))
	}
	var parts []string
	if in.Counts.Drift > 0 {
		parts = append(parts, fmt.Sprintf("%d drifted", in.Counts.Drift))
	}
	if in.Counts.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending", in.Counts.Pending))
	}
	if len(parts) == 0 {
		return "Terraform drift in " + in.Workspace
	}
	return "Terraform drift in " + in.Workspace + ": " + strings.Join(parts, ", ")
}

// Plural is n and noun, with an s unless n is 1: "1 resource", "3 resources".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Duration is d, rounded to the minute, in days and hours or hours and
// minutes: "45m", "1h 5m", "3h", "2d", "2d 4h"; "under a minute" below
// half a minute (or negative).
func Duration(d time.Duration) string {
	d = d.Round(time.Minute)
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0 && hours > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case days > 0:
		return fmt.Sprintf("%dd", days)
	case hours > 0 && mins > 0:
		return fmt.Sprintf("%dh %dm", hours, mins)
	case hours > 0:
		return fmt.Sprintf("%dh", hours)
	case mins > 0:
		return fmt.Sprintf("%dm", mins)
	}
	return "under a minute"
}

// CountsText is c as "3 drifted, 1 pending, 2 forbidden", leaving out
// zeros; "no findings" when all are zero.
func CountsText(c drift.Counts) string {
	var parts []string
	if c.Drift > 0 {
		parts = append(parts, fmt.Sprintf("%d drifted", c.Drift))
	}
	if c.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending", c.Pending))
	}
	if c.Forbidden > 0 {
		parts = append(parts, fmt.Sprintf("%d forbidden", c.Forbidden))
	}
	if len(parts) == 0 {
		return "no findings"
	}
	return strings.Join(parts, ", ")
}
