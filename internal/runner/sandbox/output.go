package sandbox

import (
	"context"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Tail keeps the last max bytes written to it.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail returns a Tail of n bytes.
func NewTail(n int) *Tail { return &Tail{max: n} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Reset forgets what was written: each step's diagnostics are its own.
func (t *Tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.buf[:0]
}

// Redactor replaces known secret values in text.
type Redactor []string

// NewRedactor redacts secrets (values shorter than 4 bytes would shred
// ordinary text and are left alone), longest first. A multi-line secret (a
// PEM key) is also redacted line by line: logs are redacted per line.
func NewRedactor(secrets []string) Redactor {
	var r Redactor
	for _, v := range secrets {
		if len(v) >= 4 {
			r = append(r, v)
		}
		if strings.Contains(v, "\n") {
			for _, line := range strings.Split(v, "\n") {
				if line = strings.TrimSpace(line); len(line) >= 4 {
					r = append(r, line)
				}
			}
		}
	}
	sort.Slice(r, func(i, j int) bool { return len(r[i]) > len(r[j]) })
	return r
}

// Apply returns text with every secret replaced by [REDACTED].
func (r Redactor) Apply(text string) string {
	for _, v := range r {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return text
}

var (
	diagError = regexp.MustCompile(`(?m)^(?:│\s*)?Error: (.+)$`)
	diagWith  = regexp.MustCompile(`(?m)^(?:│\s*)?\s*with ([^,\s]+),`)
	diagAt    = regexp.MustCompile(`(?m)^(?:│\s*)?\s*on (\S+) line (\d+)`)
)

// Diagnostic extracts a one-line reason from Terraform's stderr: the first
// "Error:" summary and, when they belong to it, the resource it is about
// ("with ADDRESS,") and its "on FILE line N" location. Detail paragraphs
// and source snippets are left out: they can quote values.
func Diagnostic(stderr string, err error) string {
	m := diagError.FindStringSubmatchIndex(stderr)
	if m == nil {
		if err != nil {
			return FirstLine(ErrorText(err))
		}
		return "failed"
	}
	reason := "Error: " + strings.TrimSpace(stderr[m[2]:m[3]])
	rest := stderr[m[1]:]
	if next := diagError.FindStringIndex(rest); next != nil {
		rest = rest[:next[0]]
	}
	var where []string
	if w := diagWith.FindStringSubmatch(rest); w != nil {
		where = append(where, w[1])
	}
	if at := diagAt.FindStringSubmatch(rest); at != nil {
		where = append(where, at[1]+" line "+at[2])
	}
	if len(where) > 0 {
		reason += " (" + strings.Join(where, ", ") + ")"
	}
	if n := len(diagError.FindAllStringIndex(stderr, -1)); n > 1 {
		reason += " (and " + strconv.Itoa(n-1) + " more errors)"
	}
	return reason
}

// ErrorText is err.Error(), safe for tfexec's errors: after a cancelled
// command whose process exited cleanly, tfexec returns a cmdErr wrapping a
// nil error, and its Error method panics (tfexec v0.26.0 errors.go:70). A
// run must never die of its own error message.
func ErrorText(err error) (text string) {
	if err == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			text = "terraform stopped"
			if errors.Is(err, context.DeadlineExceeded) {
				text = "terraform stopped: " + context.DeadlineExceeded.Error()
			} else if errors.Is(err, context.Canceled) {
				text = "terraform stopped: " + context.Canceled.Error()
			}
		}
	}()
	return err.Error()
}
