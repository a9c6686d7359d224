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
// drift in WS: 2 drifted, 1 pending" (a scan's: "3 unmanaged, 1 managed
// twice"), "Forbidden resource types in WS: 1
// resource", "Checks failing in WS: 1 check" or "Drift checks failing for
// WS: REASON"; a group's, "Terraform drift, one cause: GROUP TITLE".
func Title(in Incident) string {
	if in.Group != nil {
		return "Terraform drift, one cause: " + in.Group.Title
	}
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
	if in.Counts.Unmanaged > 0 {
		parts = append(parts, fmt.Sprintf("%d unmanaged", in.Counts.Unmanaged))
	}
	if in.Counts.ManagedTwice > 0 {
		parts = append(parts, fmt.Sprintf("%d managed twice", in.Counts.ManagedTwice))
	}
	if len(parts) == 0 {
		return "Terraform drift in " + in.Workspace
	}
	return "Terraform drift in " + in.Workspace + ": " + strings.Join(parts, ", ")
}

// StableTitle is an incident's title without its counts, the same
// through the incident's life (a mail thread's subject, an issue's name):
// "Drift checks failing for WS", "Forbidden resource types in WS", or for
// any other class "Terraform drift in WS". ws is the workspace as the
// vendor shows it.
func StableTitle(c Class, ws string) string {
	switch c {
	case ClassErrored:
		return "Drift checks failing for " + ws
	case ClassForbidden:
		return "Forbidden resource types in " + ws
	}
	return "Terraform drift in " + ws
}

// StatusText is an incident's status at message m: "Open for D" or
// "Resolved after D", d being how long it has been open in the vendor's
// rounding; "Open" or "Resolved" when d is "" (unknown).
func StatusText(m Message, d string) string {
	switch {
	case m.Event == EventResolve && d != "":
		return "Resolved after " + d
	case m.Event == EventResolve:
		return "Resolved"
	case d != "":
		return "Open for " + d
	}
	return "Open"
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

// Capped is text of each of items, the first limit of them, and, when
// there are more, a last entry saying how many are left out:
// fmt.Sprintf(more, n), e.g. "and %d more". Nil for no items.
func Capped[T any](items []T, limit int, more string, text func(T) string) []string {
	var out []string
	for i, x := range items {
		if i == limit {
			return append(out, fmt.Sprintf(more, len(items)-limit))
		}
		out = append(out, text(x))
	}
	return out
}

// EventNote is what a message's title adds to say what it reports:
// " (findings changed)" for an update, " (still open since SINCE)" for a
// renotify, " (RESULT)" for a remediation (its result's title in lower
// case, a result of no known kind shown through clean), "" for any other
// event.
func EventNote(m Message, since string, clean func(string) string) string {
	switch m.Event {
	case EventUpdate:
		return " (findings changed)"
	case EventRenotify:
		return " (still open since " + since + ")"
	case EventRemediation:
		return " (" + strings.ToLower(m.Remediation.Result.Title(clean)) + ")"
	}
	return ""
}

// EventWord says what message m was, for a footer: "opened", "findings
// changed", renotify (the vendor's word for a reminder), the
// remediation's result (as EventNote says it), "resolved"; an event of no
// known kind is its name.
func EventWord(m Message, renotify string, clean func(string) string) string {
	switch m.Event {
	case EventOpen:
		return "opened"
	case EventUpdate:
		return "findings changed"
	case EventRenotify:
		return renotify
	case EventRemediation:
		return strings.ToLower(m.Remediation.Result.Title(clean))
	case EventResolve:
		return "resolved"
	}
	return string(m.Event)
}

// Fence is a Markdown fence for s: more backticks than its longest run of
// them, and at least least.
func Fence(s string, least int) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(least, longest+1))
}

// CodeSpan is s (one line, not empty) as a Markdown code span, where no
// mention, reference, link or HTML is rendered: in a Fence, with a space
// each side when s starts or ends with a backtick.
func CodeSpan(s string) string {
	fence := Fence(s, 1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// maxProvenance caps Provenance's line, in runes.
const maxProvenance = 200

// Provenance is one short line on who or what is behind a finding, for
// the notifiers that list findings: "changed by ACTOR at TIME (SOURCE)"
// for a drift its attribution command answered, "last changed in HASH by
// AUTHOR" for a pending change with the commit that last changed its
// block, "managed by WS: ADDRESS and WS: ADDRESS" for a resource two
// workspaces manage, "in no workspace's state: NAME" for one none does,
// "" otherwise. It is plain text on one line, at most 200 runes:
// each notifier escapes it as it escapes other text.
func Provenance(f drift.Finding) string {
	switch {
	case f.Attribution != nil:
		a := f.Attribution
		s := "changed by " + a.Actor
		if !a.Time.IsZero() {
			s += " at " + a.Time.UTC().Format("2006-01-02 15:04 UTC")
		}
		if a.Source != "" {
			s += " (" + a.Source + ")"
		}
		return Truncate(OneLine(s), maxProvenance)
	case f.Kind == drift.KindManagedTwice:
		return Truncate(OneLine("managed by "+strings.Join(f.ManagedBy, " and ")), maxProvenance)
	case f.Kind == drift.KindUnmanaged:
		return Truncate(OneLine("in no workspace's state: "+f.Detail), maxProvenance)
	case f.Commit != nil:
		h := f.Commit.Hash
		if len(h) > 12 {
			h = h[:12]
		}
		return Truncate(OneLine("last changed in "+h+" by "+f.Commit.Author), maxProvenance)
	}
	return ""
}
