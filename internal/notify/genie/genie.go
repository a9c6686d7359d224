package genie

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Field limits: OpsGenie's documented alert limits, which JSM's alerts
// (the same alert model) are held to as well. The service truncates
// silently; building within them keeps what is cut under our control.
const (
	// MaxMessage bounds the alert's message (its title).
	MaxMessage = 130
	// MaxAlias bounds the alias (the incident key).
	MaxAlias = 512
	// MaxDescription bounds the alert's description.
	MaxDescription = 15000
	// MaxNote bounds a note (create, add-note and close notes).
	MaxNote = 25000
	// MaxTags is how many tags an alert carries at most.
	MaxTags = 20
	// MaxTag bounds one tag.
	MaxTag = 50
	// MaxEntity bounds the entity (the workspace).
	MaxEntity = 512
	// MaxDetailValue bounds one value of the details.
	MaxDetailValue = 8000
)

// maxLine bounds one line (a finding, a header line), so one huge
// address cannot eat a description's or a note's budget.
const maxLine = 1000

// Source is the alert's source field and the notes' source.
const Source = "driftwatch"

// priorities maps severities to alert priorities.
var priorities = map[notify.Severity]string{
	notify.SeverityCritical: "P1",
	notify.SeverityHigh:     "P2",
	notify.SeverityModerate: "P3",
	notify.SeverityLow:      "P4",
	notify.SeverityInfo:     "P5",
}

// Priority maps s to "P1".."P5"; an unknown severity is "P3", the
// services' default.
func Priority(s notify.Severity) string {
	if p, ok := priorities[s]; ok {
		return p
	}
	return "P3"
}

// Alert is the create body both services take, less responders (which
// differ: OpsGenie adds configured ones, and its SDK types them).
type Alert struct {
	Message     string
	Alias       string
	Description string
	Tags        []string
	Details     map[string]string
	Entity      string
	Source      string
	Priority    string // "P1".."P5"
}

// NewAlert is the create body of in (an open or renotify message's
// incident), every field within its limit. The alias is in.Key as it
// is: check it with ValidAlias first.
func NewAlert(in notify.Incident) Alert {
	return Alert{
		Message:     notify.Truncate(notify.Title(in), MaxMessage),
		Alias:       in.Key,
		Description: description(in),
		Tags:        tags(in),
		Details:     details(in),
		Entity:      notify.Truncate(in.Workspace, MaxEntity),
		Source:      Source,
		Priority:    Priority(in.Severity),
	}
}

// RenotifyNote is the note of a re-notification: since when the
// incident is open, and the run that found it still open.
func RenotifyNote(in notify.Incident) string {
	return notify.Truncate(fmt.Sprintf("Still open since %s (re-notification, run %s).", in.Since.UTC().Format(time.RFC3339), orNone(in.RunID)), MaxNote)
}

// CloseNote is the note of a resolve message's close.
func CloseNote(in notify.Incident) string {
	var what string
	switch in.Class {
	case notify.ClassErrored:
		what = "drift checks of " + in.Workspace + " succeed again"
	case notify.ClassForbidden:
		what = "no forbidden resource types left in " + in.Workspace
	default:
		what = in.Workspace + " matches its Terraform configuration again"
	}
	return notify.Truncate(fmt.Sprintf("Resolved: %s (run %s).", what, orNone(in.RunID)), MaxNote)
}

// RemediationNote tells what became of a remediation of the incident's
// drift: "Remediation failed (remediation ID, run ID).", the reason,
// then raised when the remediation failed, then the run's URL. raised is
// the line that differs between the services: a failed remediation
// raised the incident's severity, and each says what became of the
// alert's priority. m.Remediation must not be nil.
func RemediationNote(m notify.Message, raised string) string {
	r := m.Remediation
	var what string
	switch r.Result {
	case notify.RemediationAwaitingApproval:
		what = fmt.Sprintf("Remediation proposed: reverts %s; awaiting approval (driftwatch approve %s)", notify.Plural(r.Resources, "resource"), r.ID)
		if !r.ExpiresAt.IsZero() {
			what += " before " + r.ExpiresAt.UTC().Format(time.RFC3339)
		}
	case notify.RemediationApproved:
		what = fmt.Sprintf("Remediation approved (%s): reverting %s now", orNone(r.Mode), notify.Plural(r.Resources, "resource"))
	case notify.RemediationApplied:
		what = fmt.Sprintf("Remediation applied: reverted %s; a verification run follows", notify.Plural(r.Resources, "resource"))
	case notify.RemediationFailed:
		what = "Remediation failed"
	case notify.RemediationVerificationFailed:
		what = "Remediation verification failed"
	default:
		what = "Remediation " + string(r.Result)
	}
	b := newBounded(MaxNote)
	ref := "remediation " + orNone(r.ID)
	if r.ApplyRunID != "" {
		ref += ", run " + r.ApplyRunID
	}
	b.line(notify.Truncate(notify.OneLine(what+" ("+ref+")."), maxLine))
	if r.Reason != "" {
		b.line(notify.Truncate("Reason: "+notify.OneLine(r.Reason), maxLine))
	}
	if r.Result.Failed() {
		b.line(raised)
	}
	if r.URL != "" {
		b.line(notify.Truncate("Run: "+r.URL, maxLine))
	}
	return b.String()
}

// description lists the incident and its findings, within
// MaxDescription. Findings carry paths, never values.
func description(in notify.Incident) string {
	head := []string{
		"Workspace: " + in.Workspace,
		"Class: " + string(in.Class) + ", severity: " + string(in.Severity),
		"Since: " + in.Since.UTC().Format(time.RFC3339),
	}
	if in.RunID != "" {
		head = append(head, "Run: "+in.RunID)
	}
	if in.Owner != "" {
		head = append(head, "Owner: "+in.Owner)
	}
	if in.URL != "" {
		head = append(head, "Status page: "+in.URL)
	}
	if in.Error != "" {
		head = append(head, "Error: "+notify.OneLine(in.Error))
	}
	b := newBounded(MaxDescription)
	for _, l := range head {
		b.line(notify.Truncate(l, maxLine))
	}
	if len(in.Findings) > 0 {
		b.line("")
		b.line(fmt.Sprintf("Findings (%s):", countsText(in.Counts)))
		for i, f := range in.Findings {
			if !b.line(findingLine("-", f)) {
				b.more(len(in.Findings) - i)
				break
			}
		}
	}
	return b.String()
}

// DeltaNote describes an update: what was added, removed and changed,
// within MaxNote.
func DeltaNote(m notify.Message) string {
	in := m.Incident
	b := newBounded(MaxNote)
	b.line(notify.Truncate(fmt.Sprintf("Findings changed in %s (run %s), now %s.", in.Workspace, orNone(in.RunID), countsText(in.Counts)), maxLine))
	if m.Delta == nil {
		return b.String()
	}
	sections := []struct {
		title, mark string
		fs          []drift.Finding
	}{
		{"Added:", "+", m.Delta.Added},
		{"Removed:", "-", m.Delta.Removed},
		{"Changed:", "~", m.Delta.Changed},
	}
	left := len(m.Delta.Added) + len(m.Delta.Removed) + len(m.Delta.Changed)
	for _, s := range sections {
		if len(s.fs) == 0 {
			continue
		}
		if !b.line(s.title) {
			b.more(left)
			return b.String()
		}
		for _, f := range s.fs {
			if !b.line(findingLine(s.mark, f)) {
				b.more(left)
				return b.String()
			}
			left--
		}
	}
	return b.String()
}

func findingLine(mark string, f drift.Finding) string {
	s := mark + " " + string(f.Kind) + " " + f.Action + " " + f.Address
	if len(f.Attributes) > 0 {
		s += ": " + strings.Join(f.Attributes, ", ")
	}
	if len(f.SeenIn) > 0 {
		s += " (seen in " + strings.Join(f.SeenIn, ", ") + ")"
	}
	if p := notify.Provenance(f); p != "" {
		s += " — " + p
	}
	return notify.Truncate(notify.OneLine(s), maxLine)
}

func countsText(c drift.Counts) string {
	return fmt.Sprintf("%d drifted, %d pending, %d forbidden", c.Drift, c.Pending, c.Forbidden)
}

// tags: driftwatch, the class, the workspace, then labels as k:v sorted by
// key; each within MaxTag characters, at most MaxTags, no duplicates.
func tags(in notify.Incident) []string {
	all := []string{"driftwatch", string(in.Class), in.Workspace}
	for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
		all = append(all, k+":"+in.Labels[k])
	}
	var out []string
	for _, t := range all {
		t = notify.Truncate(notify.OneLine(t), MaxTag)
		if t == "" || slices.Contains(out, t) {
			continue
		}
		if len(out) == MaxTags {
			break
		}
		out = append(out, t)
	}
	return out
}

// details are the incident's fields as strings, empty ones left out,
// each within MaxDetailValue.
func details(in notify.Incident) map[string]string {
	d := map[string]string{
		"incident_key": in.Key,
		"workspace":    in.Workspace,
		"class":        string(in.Class),
		"severity":     string(in.Severity),
		"drift":        strconv.Itoa(in.Counts.Drift),
		"pending":      strconv.Itoa(in.Counts.Pending),
		"forbidden":    strconv.Itoa(in.Counts.Forbidden),
		"run_id":       in.RunID,
		"status_page":  in.URL,
		"owner":        in.Owner,
		"team":         in.Team,
		"error":        notify.OneLine(in.Error),
	}
	if !in.Since.IsZero() {
		d["since"] = in.Since.UTC().Format(time.RFC3339)
	}
	for k, v := range d {
		if v == "" {
			delete(d, k)
			continue
		}
		d[k] = notify.Truncate(v, MaxDetailValue)
	}
	return d
}

// ValidAlias reports whether key can be an alias in a URL path, where
// both notifiers put it without escaping: [A-Za-z0-9._-], at most
// MaxAlias characters, not "." or "..". Both accept the same incident
// keys.
func ValidAlias(key string) bool {
	if key == "" || len(key) > MaxAlias {
		return false
	}
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return key != "." && key != ".."
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// bounded builds text of whole lines within a character limit, keeping
// room for a final "… and N more" line.
type bounded struct {
	sb    strings.Builder
	n     int // characters written
	limit int
}

const moreReserve = 80

func newBounded(limit int) *bounded { return &bounded{limit: limit} }

// line appends l and a newline if it fits (leaving room for more).
func (b *bounded) line(l string) bool {
	c := utf8.RuneCountInString(l) + 1
	if b.n+c > b.limit-moreReserve {
		return false
	}
	b.sb.WriteString(l)
	b.sb.WriteByte('\n')
	b.n += c
	return true
}

func (b *bounded) more(n int) {
	fmt.Fprintf(&b.sb, "… and %d more (see the status page)\n", n)
}

func (b *bounded) String() string { return strings.TrimSuffix(b.sb.String(), "\n") }
