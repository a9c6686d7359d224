package notify

import (
	"strings"
	"unicode/utf8"
)

// OneLine joins s's lines and collapses its whitespace: for a field that
// must stay on one line (a Slack code span, an OpsGenie message).
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Truncate cuts s to at most max runes, ending in "…" when cut (max <= 0:
// "").
func Truncate(s string, max int) string {
	if max <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
