package opsgenie

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/opsgenie/opsgenie-go-sdk-v2/alert"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// OpsGenie's documented field limits (docs.opsgenie.com, Alert API). The
// service truncates silently; building within them keeps what is cut
// under our control.
const (
	maxMessage     = 130
	maxAlias       = 512
	maxDescription = 15000
	maxNote        = 25000
	maxTags        = 20
	maxTag         = 50
	maxEntity      = 512
	maxDetailValue = 8000
	maxLine        = 1000 // one finding line, so one huge address cannot eat the budget
)

// source is the alert's source field and the notes' source.
const source = "driftwatch"

// priorities maps severities to OpsGenie priorities.
var priorities = map[notify.Severity]alert.Priority{
	notify.SeverityCritical: alert.P1,
	notify.SeverityHigh:     alert.P2,
	notify.SeverityModerate: alert.P3,
	notify.SeverityLow:      alert.P4,
	notify.SeverityInfo:     alert.P5,
}

// priority maps s to P1..P5; an unknown severity is P3, the SDK's default.
func priority(s notify.Severity) alert.Priority {
	if p, ok := priorities[s]; ok {
		return p
	}
	return alert.P3
}

// buildCreate is the create request for an open or renotify message.
// extra responders (from the config) follow the route's team.
func buildCreate(m notify.Message, extra []Responder) *alert.CreateAlertRequest {
	in := m.Incident
	req := &alert.CreateAlertRequest{
		Message:     notify.Truncate(notify.Title(in), maxMessage),
		Alias:       in.Key,
		Description: description(in),
		Responders:  responders(in.Team, extra),
		Tags:        tags(in),
		Details:     details(in),
		Entity:      notify.Truncate(in.Workspace, maxEntity),
		Source:      source,
		Priority:    priority(in.Severity),
	}
	if m.Event == notify.EventRenotify {
		req.Note = notify.Truncate(fmt.Sprintf("Still open since %s (re-notification, run %s).", in.Since.UTC().Format(time.RFC3339), orNone(in.RunID)), maxNote)
	}
	return req
}

// buildNote is the add-note request for an update message (the delta)
// or a remediation message (what became of the remediation).
func buildNote(m notify.Message) *alert.AddNoteRequest {
	note := deltaNote(m)
	if m.Event == notify.EventRemediation {
		note = remediationNote(m)
	}
	return &alert.AddNoteRequest{
		IdentifierType:  alert.ALIAS,
		IdentifierValue: m.Incident.Key,
		Source:          source,
		Note:            note,
	}
}

// remediationNote tells what became of a remediation of the incident's
// drift: "Remediation failed (remediation ID, run ID): reason. Priority
// raised to P2."
func remediationNote(m notify.Message) string {
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
	b := newBounded(maxNote)
	ref := "remediation " + orNone(r.ID)
	if r.ApplyRunID != "" {
		ref += ", run " + r.ApplyRunID
	}
	b.line(notify.Truncate(notify.OneLine(what+" ("+ref+")."), maxLine))
	if r.Reason != "" {
		b.line(notify.Truncate("Reason: "+notify.OneLine(r.Reason), maxLine))
	}
	if r.Result.Failed() {
		b.line(fmt.Sprintf("Priority raised to %s (severity %s).", priority(m.Incident.Severity), m.Incident.Severity))
	}
	if r.URL != "" {
		b.line(notify.Truncate("Run: "+r.URL, maxLine))
	}
	return b.String()
}

// buildPriority sets the alert's priority from the message's severity.
func buildPriority(m notify.Message) *alert.UpdatePriorityRequest {
	return &alert.UpdatePriorityRequest{
		IdentifierType:  alert.ALIAS,
		IdentifierValue: m.Incident.Key,
		Priority:        priority(m.Incident.Severity),
	}
}

// buildClose closes the alert of a resolve message.
func buildClose(m notify.Message) *alert.CloseAlertRequest {
	in := m.Incident
	var what string
	switch in.Class {
	case notify.ClassErrored:
		what = "drift checks of " + in.Workspace + " succeed again"
	case notify.ClassForbidden:
		what = "no forbidden resource types left in " + in.Workspace
	default:
		what = in.Workspace + " matches its Terraform configuration again"
	}
	return &alert.CloseAlertRequest{
		IdentifierType:  alert.ALIAS,
		IdentifierValue: in.Key,
		Source:          source,
		Note:            notify.Truncate(fmt.Sprintf("Resolved: %s (run %s).", what, orNone(in.RunID)), maxNote),
	}
}

// description lists the incident and its findings, within OpsGenie's
// limit. Findings carry paths, never values.
func description(in notify.Incident) string {
	var head []string
	head = append(head,
		"Workspace: "+in.Workspace,
		"Class: "+string(in.Class)+", severity: "+string(in.Severity),
		"Since: "+in.Since.UTC().Format(time.RFC3339),
	)
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
	b := newBounded(maxDescription)
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

// deltaNote describes an update: what was added, removed and changed.
func deltaNote(m notify.Message) string {
	in := m.Incident
	b := newBounded(maxNote)
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
	return notify.Truncate(notify.OneLine(s), maxLine)
}

func countsText(c drift.Counts) string {
	return fmt.Sprintf("%d drifted, %d pending, %d forbidden", c.Drift, c.Pending, c.Forbidden)
}

// tags: driftwatch, the class, the workspace, then labels as k:v sorted by
// key; each within OpsGenie's 50 characters, at most 20, no duplicates.
func tags(in notify.Incident) []string {
	all := []string{"driftwatch", string(in.Class), in.Workspace}
	for _, k := range slices.Sorted(maps.Keys(in.Labels)) {
		all = append(all, k+":"+in.Labels[k])
	}
	var out []string
	for _, t := range all {
		t = notify.Truncate(notify.OneLine(t), maxTag)
		if t == "" || slices.Contains(out, t) {
			continue
		}
		if len(out) == maxTags {
			break
		}
		out = append(out, t)
	}
	return out
}

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
		d[k] = notify.Truncate(v, maxDetailValue)
	}
	return d
}

func responders(team string, extra []Responder) []alert.Responder {
	var out []alert.Responder
	if team != "" {
		out = append(out, alert.Responder{Type: alert.TeamResponder, Name: team})
	}
	for _, r := range extra {
		ar := alert.Responder{Type: alert.ResponderType(r.Type)}
		if r.Type == "user" {
			ar.Username = r.Name
		} else {
			ar.Name = r.Name
		}
		if !slices.Contains(out, ar) {
			out = append(out, ar)
		}
	}
	return out
}

// validAlias reports whether key can be used as an alias in a URL path:
// the SDK concatenates it into the path without escaping.
func validAlias(key string) bool {
	if key == "" || len(key) > maxAlias {
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
