package local

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// redactor replaces known secret values in text.
type redactor struct{ secrets []string }

func newRedactor(secrets []string) *redactor {
	var s []string
	for _, v := range secrets {
		if len(v) >= 4 { // shorter values would shred ordinary text
			s = append(s, v)
		}
	}
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return &redactor{secrets: s}
}

func (r *redactor) apply(text string) string {
	for _, v := range r.secrets {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return text
}

var (
	diagError = regexp.MustCompile(`(?m)^(?:│\s*)?Error: (.+)$`)
	diagAt    = regexp.MustCompile(`(?m)^(?:│\s*)?\s*on (\S+) line (\d+)`)
)

// diagnosticReason extracts a one-line reason from Terraform's stderr: the
// first "Error:" summary and, if present, its "on FILE line N" location.
// Source snippets and detail paragraphs are left out: they can quote values.
func diagnosticReason(stderr string, err error) string {
	m := diagError.FindStringSubmatchIndex(stderr)
	if m == nil {
		if err != nil {
			return firstLine(err.Error())
		}
		return "failed"
	}
	reason := "Error: " + strings.TrimSpace(stderr[m[2]:m[3]])
	if at := diagAt.FindStringSubmatch(stderr[m[1]:]); at != nil {
		// Only if the location belongs to this diagnostic (before the next one).
		next := diagError.FindStringIndex(stderr[m[1]:])
		loc := diagAt.FindStringIndex(stderr[m[1]:])
		if next == nil || loc[0] < next[0] {
			reason += " (" + at[1] + " line " + at[2] + ")"
		}
	}
	if n := len(diagError.FindAllStringIndex(stderr, -1)); n > 1 {
		reason += " (and " + strconv.Itoa(n-1) + " more errors)"
	}
	return reason
}
