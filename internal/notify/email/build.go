package email

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Bounds that keep every header line short and the body readable; what
// is cut is counted or ends in "…".
const (
	maxField     = 300 // one body field: an address, a reason, a URL
	maxWorkspace = 120 // the workspace in the subject
	maxPath      = 200 // one attribute path
	maxPaths     = 20  // attribute paths per finding
	maxFindings  = 50  // findings (or delta entries) listed
	foldAt       = 76  // header lines are folded at spaces past this
	maxIDPart    = 100 // the message's ID in a Message-ID, before hashing
)

// options are the notifier's settings the builder needs.
type options struct {
	from   *mail.Address
	to     []*mail.Address
	prefix string
}

// message is one SMTP transaction: the envelope and the RFC 5322 data.
type message struct {
	// From is the envelope's MAIL FROM (an addr-spec).
	From string
	// To are the envelope's RCPT TO addresses.
	To []string
	// ID is the Message-ID header's value, with its angle brackets.
	ID string
	// Data is the message: CRLF-terminated headers, a blank line and a
	// quoted-printable text/plain body, 7-bit clean.
	Data []byte
}

// buildMessage is m as an email (pure: m.At is its Date). An incident's
// open message is its thread's root: its Message-ID is derived from the
// incident (Key and Since); every later message has its own
// Message-ID, derived from m.ID, and In-Reply-To and References naming
// the root, with "Re: " before the same subject.
func buildMessage(m notify.Message, o options) (message, error) {
	in := m.Incident
	if err := m.Check(); err != nil {
		return message{}, err
	}
	if m.ID == "" {
		return message{}, errors.New("message without an ID: no Message-ID to derive")
	}
	if in.Key == "" {
		return message{}, fmt.Errorf("message %s: incident without a key: no thread to derive", m.ID)
	}
	domain := domainOf(o.from.Address)
	root := rootID(in, domain)
	subject := o.prefix + " " + threadTitle(in)

	var h bytes.Buffer
	header := func(name, value string) {
		h.WriteString(fold(name + ": " + value))
		h.WriteString("\r\n")
	}
	header("Date", m.At.Format(time.RFC1123Z))
	header("From", o.from.String())
	to := make([]string, len(o.to))
	rcpts := make([]string, len(o.to))
	for i, a := range o.to {
		to[i], rcpts[i] = a.String(), a.Address
	}
	header("To", strings.Join(to, ", "))
	id := root
	if m.Event == notify.EventOpen {
		header("Subject", encodeText(subject))
		header("Message-ID", id)
	} else {
		id = messageID(m.ID, domain)
		header("Subject", encodeText("Re: "+subject))
		header("Message-ID", id)
		header("In-Reply-To", root)
		header("References", root)
	}
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	// RFC 3834: no vacation or out-of-office replies to a robot.
	header("Auto-Submitted", "auto-generated")
	header("X-Auto-Response-Suppress", "All")
	header("X-Driftwatch-Event", string(m.Event))
	header("X-Driftwatch-Incident", encodeText(clean(in.Key, maxField)))
	header("X-Driftwatch-Severity", clean(string(in.Severity), 20))
	h.WriteString("\r\n")

	qp := quotedprintable.NewWriter(&h)
	if _, err := qp.Write([]byte(body(m))); err != nil {
		return message{}, err
	}
	if err := qp.Close(); err != nil {
		return message{}, err
	}
	return message{From: o.from.Address, To: rcpts, ID: id, Data: h.Bytes()}, nil
}

// rootID is the Message-ID of the incident's open message, the root of
// its thread: the same for every message of one incident (Key and Since),
// so no state is needed to reply to it.
func rootID(in notify.Incident, domain string) string {
	return "<dw-" + idPart(in.Key) + "." + in.Since.UTC().Format("20060102T150405Z") + "@" + domain + ">"
}

// messageID is the Message-ID of a message other than the open: the same
// for every resend of m.ID.
func messageID(id, domain string) string {
	return "<dw-" + idPart(id) + "@" + domain + ">"
}

// idPart is s as a dot-atom (letters, digits and -_.+=/ with no leading,
// trailing or double dot), or, if it is not one or too long, a hash of
// it: deterministic either way.
func idPart(s string) string {
	ok := s != "" && len(s) <= maxIDPart && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") && !strings.Contains(s, "..")
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.+=/", r):
			continue
		}
		ok = false
		break
	}
	if ok {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:16])
}

// threadTitle is the subject's title: the class and workspace only, so it
// stays the same through the thread (mail clients split a thread whose
// subject changes); the counts are in the body.
func threadTitle(in notify.Incident) string {
	return notify.StableTitle(in.Class, clean(in.Workspace, maxWorkspace))
}

// headline is the body's first line: the incident's title and what this
// message reports.
func headline(m notify.Message) string {
	s := "Resolved: " + threadTitle(m.Incident)
	if m.Event != notify.EventResolve {
		s = notify.Title(m.Incident) + notify.EventNote(m, stamp(m.Incident.Since), cleanResult)
	}
	return clean(s, 2*maxField)
}

// eventText says what the message is, for the body's Event line.
func eventText(m notify.Message) string {
	return notify.EventWord(m, "still open (reminder)", cleanResult)
}

// cleanResult shows a remediation result of no known kind.
func cleanResult(s string) string { return clean(s, 40) }

// body is the plain-text body (LF line ends; the quoted-printable writer
// makes them CRLF). Findings are addresses, actions and attribute paths:
// never values.
func body(m notify.Message) string {
	in := m.Incident
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	field := func(name, value string) {
		if value != "" {
			line("%-12s %s", name+":", value)
		}
	}
	line("%s", headline(m))
	line("")
	field("Event", eventText(m))
	field("Workspace", clean(in.Workspace, maxField))
	field("Class", clean(string(in.Class), 40))
	sev := clean(string(in.Severity), 40)
	if in.Escalated > 0 {
		sev += fmt.Sprintf(" (raised %s by failed remediations)", notify.Plural(in.Escalated, "step"))
	}
	field("Severity", sev)
	field("Owner", clean(in.Owner, maxField))
	field("Team", clean(in.Team, maxField))
	if !in.Since.IsZero() {
		field("Since", stamp(in.Since))
	}
	field("Run", clean(in.RunID, maxField))
	if len(in.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
			ls = append(ls, clean(k, maxField)+"="+clean(in.Labels[k], maxField))
		}
		field("Labels", strings.Join(ls, ", "))
	}
	if m.Event != notify.EventResolve {
		if in.Class != notify.ClassErrored {
			c := in.Counts
			field("Counts", fmt.Sprintf("%d drifted, %d pending, %d forbidden", c.Drift, c.Pending, c.Forbidden))
		}
		field("Error", clean(in.Error, maxField))
	}

	if len(in.Findings) > 0 && m.Event != notify.EventResolve {
		line("")
		line("Findings (%d):", len(in.Findings))
		findings(line, "  ", in.Findings, maxFindings)
	}
	if d := m.Delta; m.Event == notify.EventUpdate && d != nil {
		line("")
		line("What changed:")
		left := maxFindings
		for _, part := range []struct {
			name string
			fs   []drift.Finding
		}{{"Added", d.Added}, {"Removed", d.Removed}, {"Changed", d.Changed}} {
			if len(part.fs) == 0 {
				continue
			}
			line("  %s (%d):", part.name, len(part.fs))
			left -= findings(line, "    ", part.fs, left)
		}
	}
	if r := m.Remediation; m.Event == notify.EventRemediation && r != nil {
		line("")
		head := "Remediation " + clean(r.ID, maxField)
		if r.Mode != "" {
			head += " (" + clean(r.Mode, 40) + ")"
		}
		line("%s: %s", head, clean(strings.ReplaceAll(string(r.Result), "_", " "), 40))
		sub := func(name, value string) {
			if value != "" {
				line("  %-11s %s", name+":", value)
			}
		}
		sub("Reason", clean(r.Reason, maxField))
		sub("Resources", fmt.Sprint(r.Resources))
		sub("Apply run", clean(r.ApplyRunID, maxField))
		if !r.ExpiresAt.IsZero() {
			sub("Expires", stamp(r.ExpiresAt))
		}
		sub("Details", clean(r.URL, maxField))
	}
	if in.URL != "" {
		line("")
		line("Status page: %s", clean(in.URL, maxField))
	}
	line("")
	line("-- ")
	line("driftwatch incident %s", clean(in.Key, maxField))
	line("Findings name resources and attribute paths, never values.")
	return b.String()
}

// findings lists at most limit of fs through line and returns how many
// lines of fs it used (listed, plus one for the rest if any).
func findings(line func(string, ...any), indent string, fs []drift.Finding, limit int) int {
	limit = max(limit, 0)
	n := min(len(fs), limit)
	for _, f := range fs[:n] {
		s := fmt.Sprintf("%s- %s %s [%s]", indent, clean(f.Action, 40), clean(f.Address, maxField), clean(string(f.Kind), 40))
		if d := clean(f.Detail, maxField); d != "" {
			s += ": " + d
		}
		line("%s", s)
		if len(f.Attributes) > 0 {
			as := notify.Capped(f.Attributes, maxPaths, "and %d more", func(a string) string { return clean(a, maxPath) })
			line("%s    attributes: %s", indent, strings.Join(as, ", "))
		}
		if len(f.SeenIn) > 0 {
			var ss []string
			for _, x := range f.SeenIn {
				ss = append(ss, clean(x, 40))
			}
			line("%s    seen in: %s", indent, strings.Join(ss, ", "))
		}
		if p := clean(notify.Provenance(f), maxField); p != "" {
			line("%s    %s", indent, p)
		}
	}
	if rest := len(fs) - n; rest > 0 {
		line("%s- and %d more (see the status page)", indent, rest)
	}
	return n
}

// clean makes s one line without control characters, at most limit
// runes: what reaches a header or a body line cannot start another.
func clean(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return notify.Truncate(notify.OneLine(s), limit)
}

// stamp formats t for the body, in UTC.
func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// encodeText is s as an unstructured header value, 7-bit: RFC 2047 Q
// encoded-words when s is not printable ASCII.
func encodeText(s string) string {
	return mime.QEncoding.Encode("utf-8", s)
}

// fold folds a header line at spaces so its lines stay near foldAt
// characters (a word longer than that stays whole on its own line);
// unfolding restores it exactly.
func fold(s string) string {
	if len(s) <= foldAt {
		return s
	}
	words := strings.Split(s, " ")
	var b strings.Builder
	n := 0
	for i, w := range words {
		switch {
		case i == 0:
		case n+1+len(w) > foldAt && w != "":
			b.WriteString("\r\n ")
			n = 1
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
