package sandbox

import (
	"context"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/driftwatch/driftwatch/internal/redact"
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

// Apply returns text with every secret replaced by [REDACTED], and the
// user info and query string of every URL in it too (redact.URLs): a state
// backend's address or a git remote may carry a token that is no known
// value (a zero Redactor scrubs URLs as well).
func (r Redactor) Apply(text string) string {
	for _, v := range r {
		text = strings.ReplaceAll(text, v, "[REDACTED]")
	}
	return redact.URLs(text)
}

var (
	diagError = regexp.MustCompile(`(?m)^(?:│\s*)?Error: (.+)$`)
	diagWith  = regexp.MustCompile(`(?m)^(?:│\s*)?\s*with ([^,\s]+),`)
	diagAt    = regexp.MustCompile(`(?m)^(?:│\s*)?\s*on (\S+) line (\d+)`)
	// plainError is an error printed as plain text rather than as a
	// diagnostic: OpenTofu's init prints a backend's failure to read the
	// state as "Error refreshing state: ..." without "Error:".
	plainError = regexp.MustCompile(`(?m)^(?:│\s*)?(Error [a-z]+(?: [a-z]+){0,5}: .+)$`)
	// initPreamble is the summary init puts before the diagnostics of an
	// invalid configuration ("Terraform encountered problems during
	// initialisation, including problems with the configuration, described
	// below."): it says that the diagnostics follow, not what is wrong.
	initPreamble = regexp.MustCompile(`^(?:Terraform|OpenTofu) encountered problems during initiali[sz]ation`)
)

// MoreErrors is the suffix of a reason that leaves out n other errors:
// " (and 1 more error)", " (and 3 more errors)"; "" for none.
func MoreErrors(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return " (and 1 more error)"
	}
	return " (and " + strconv.Itoa(n) + " more errors)"
}

// Diagnostic extracts a one-line reason from Terraform's stderr: the first
// "Error:" summary and, when they belong to it, the resource it is about
// ("with ADDRESS,") and its "on FILE line N" location, then how many other
// errors there were. init's preamble to an invalid configuration's
// diagnostics is passed over for the first of them. Detail paragraphs
// and source snippets are left out: they can quote values. A failed call
// of the s3 state backend is told as such (BackendFailure), from the
// summary or its detail.
func Diagnostic(stderr string, err error) string {
	all := diagError.FindAllStringSubmatchIndex(stderr, -1)
	if len(all) > 1 && initPreamble.MatchString(stderr[all[0][2]:all[0][3]]) {
		all = all[1:]
	}
	var m []int
	if len(all) > 0 {
		m = all[0]
	}
	if m == nil {
		if p := plainError.FindStringSubmatch(stderr); p != nil {
			if r, ok := BackendFailure(p[1], p[1]); ok {
				return r
			}
			return strings.TrimSpace(p[1])
		}
		if err != nil {
			return FirstLine(ErrorText(err))
		}
		return "failed"
	}
	summary := strings.TrimSpace(stderr[m[2]:m[3]])
	reason := "Error: " + summary
	rest := stderr[m[1]:]
	if next := diagError.FindStringIndex(rest); next != nil {
		rest = rest[:next[0]]
	}
	if r, ok := BackendFailure(summary, summary+"\n"+rest); ok {
		reason = r
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
	return reason + MoreErrors(len(all)-1)
}

// s3CallError is the AWS SDK's error for a failed S3 call, as the s3
// state backend of Terraform and OpenTofu reports it: "operation error S3:
// HeadObject, exceeded maximum number of attempts, 5, https response
// error StatusCode: 500, RequestID: , HostID: , api error
// InternalServerError: Internal Server Error"; status 0 is a request that
// got no answer ("request send failed, Get \"URL\": dial tcp ...").
var (
	s3CallError = regexp.MustCompile(`operation error S3: (\w+), (?:exceeded maximum number of attempts, (\d+), )?https response error StatusCode: (\d+), RequestID: [^,]*, HostID: [^,]*, (.*)`)
	s3APIError  = regexp.MustCompile(`^api error (\w+)`)
	s3SendError = regexp.MustCompile(`^request send failed, \w+ "[^"]*": (.+)`)
)

// BackendFailure explains a failed call of the s3 state backend found in
// text (a diagnostic: its summary and detail, where Terraform may have
// wrapped the SDK's message across lines): whether the backend could not
// be reached (no answer) or failed (5xx), which call, after how many
// attempts, and Terraform's own summary (up to its first colon) for
// context, e.g.
//
//	the state backend could not be reached: S3 GetObject failed after 5 attempts: dial tcp 127.0.0.1:9000: connect: connection refused (error loading state)
//
// Only the structured parts of the SDK's message are kept (the request's
// URL is not); ok is false when text holds no such failure, or the
// backend gave an answer of its own (4xx: a held lock, a refused
// credential), which Terraform's summary tells.
func BackendFailure(summary, text string) (reason string, ok bool) {
	// Undo the wrapping: each paragraph (lines up to a blank one, the
	// box of a diagnostic taken off) as one line.
	var m []string
	var para []string
	for _, line := range append(strings.Split(text, "\n"), "") {
		if line = strings.Trim(line, " \t│╷╵"); line != "" {
			para = append(para, line)
			continue
		}
		if m = s3CallError.FindStringSubmatch(strings.Join(para, " ")); m != nil {
			break
		}
		para = para[:0]
	}
	if m == nil {
		return "", false
	}
	op, attempts, status, rest := m[1], m[2], m[3], strings.TrimSpace(m[4])
	after := ""
	if attempts != "" {
		after = " after " + attempts + " attempts"
	}
	switch code, _ := strconv.Atoi(status); {
	case code == 0:
		why := rest
		if s := s3SendError.FindStringSubmatch(rest); s != nil {
			why = s[1]
		}
		reason = "the state backend could not be reached: S3 " + op + " failed" + after + ": " + why
	case code >= 500:
		reason = "the state backend failed: S3 " + op + " answered " + status
		if a := s3APIError.FindStringSubmatch(rest); a != nil {
			reason += " " + a[1]
		}
		reason += after
	default:
		// An answer the backend meant (a held lock's 412, a refused
		// credential's 403): Terraform's own summary says it best.
		return "", false
	}
	if ctx, _, _ := strings.Cut(summary, ":"); ctx != "" && !strings.HasPrefix(ctx, "operation error") {
		reason += " (" + strings.TrimSpace(ctx) + ")"
	}
	return reason, true
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
