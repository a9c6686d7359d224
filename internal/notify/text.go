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
