package jsm

import (
	"encoding/json"
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

// Field limits: OpsGenie's documented ones, which JSM's alerts (the same
// alert model) are held to here as well. Building within them keeps
// what is cut under our control.
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

// aliasQuery makes an action's path segment an alias.
const aliasQuery = "identifierType=alias"

// Operations, as errors and logs name them.
const (
	opCreate = "create alert"
	opNote   = "add note to alert"
	opClose  = "close alert"
)

// priorities maps severities to alert priorities, as the OpsGenie
// notifier does.
var priorities = map[notify.Severity]string{
	notify.SeverityCritical: "P1",
	notify.SeverityHigh:     "P2",
	notify.SeverityModerate: "P3",
	notify.SeverityLow:      "P4",
	notify.SeverityInfo:     "P5",
}

// priority maps s to P1..P5; an unknown severity is P3, the service's
// default.
func priority(s notify.Severity) string {
	if p, ok := priorities[s]; ok {
		return p
	}
	return "P3"
}

// createRequest is the body of POST /v2/alerts.
type createRequest struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description,omitempty"`
	Responders  []responder       `json:"responders,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Details     map[string]string `json:"details,omitempty"`
	Entity      string            `json:"entity,omitempty"`
	Source      string            `json:"source,omitempty"`
	Priority    string            `json:"priority,omitempty"`
}

// responder is a responder by name (a JSM team's name).
type responder struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// actionRequest is the body of the notes and close actions.
type actionRequest struct {
	Source string `json:"source"`
	Note   string `json:"note"`
}

// apiRequest is one request of a message, as sent: POST to the alerts
// endpoint plus Path, with Query, and Body.
type apiRequest struct {
	Op    string // what errors and logs call it
	Path  string // "" (create) or "/{alias}/notes", "/{alias}/close"
	Query string
	Body  []byte
}

// buildRequests is what a message sends, in order: open is a create;
// renotify a create (de-duplicated into the open alert) and a note;
// update and remediation a note; resolve a close.
func buildRequests(m notify.Message) ([]apiRequest, error) {
	alias := m.Incident.Key
	if !validAlias(alias) {
		return nil, fmt.Errorf("incident key %q cannot be an alias (want [A-Za-z0-9._-], at most %d characters)", alias, maxAlias)
	}
	create := func() (apiRequest, error) {
		b, err := json.Marshal(buildCreate(m))
		return apiRequest{Op: opCreate, Body: b}, err
	}
	action := func(op, verb string, body actionRequest) (apiRequest, error) {
		b, err := json.Marshal(body)
		return apiRequest{Op: op, Path: "/" + alias + "/" + verb, Query: aliasQuery, Body: b}, err
	}
	var out []apiRequest
	add := func(r apiRequest, err error) error {
		out = append(out, r)
		return err
	}
	var err error
	switch m.Event {
	case notify.EventOpen:
		err = add(create())
	case notify.EventRenotify:
		if err = add(create()); err == nil {
			err = add(action(opNote, "notes", actionRequest{Source: source, Note: renotifyNote(m.Incident)}))
		}
	case notify.EventUpdate:
		err = add(action(opNote, "notes", actionRequest{Source: source, Note: deltaNote(m)}))
	case notify.EventRemediation:
		if m.Remediation == nil {
			return nil, fmt.Errorf("message %s: remediation event without its remediation", m.ID)
		}
		err = add(action(opNote, "notes", actionRequest{Source: source, Note: remediationNote(m)}))
	case notify.EventResolve:
		err = add(action(opClose, "close", actionRequest{Source: source, Note: closeNote(m.Incident)}))
	default:
		return nil, fmt.Errorf("unknown event %q", m.Event)
	}
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return out, nil
}

// buildCreate is the create body of an open or renotify message.
func buildCreate(m notify.Message) createRequest {
	in := m.Incident
	req := createRequest{
		Message:     notify.Truncate(notify.Title(in), maxMessage),
		Alias:       in.Key,
		Description: description(in),
		Tags:        tags(in),
		Details:     details(in),
		Entity:      notify.Truncate(in.Workspace, maxEntity),
		Source:      source,
		Priority:    priority(in.Severity),
	}
	if in.Team != "" {
		req.Responders = []responder{{Type: "team", Name: in.Team}}
	}
	return req
}

// renotifyNote is the note of a re-notification.
func renotifyNote(in notify.Incident) string {
	return notify.Truncate(fmt.Sprintf("Still open since %s (re-notification, run %s).", in.Since.UTC().Format(time.RFC3339), orNone(in.RunID)), maxNote)
}

// closeNote is the note of a resolve message's close.
func closeNote(in notify.Incident) string {
	var what string
	switch in.Class {
	case notify.ClassErrored:
		what = "drift checks of " + in.Workspace + " succeed again"
	case notify.ClassForbidden:
		what = "no forbidden resource types left in " + in.Workspace
	default:
		what = in.Workspace + " matches its Terraform configuration again"
	}
	return notify.Truncate(fmt.Sprintf("Resolved: %s (run %s).", what, orNone(in.RunID)), maxNote)
}

// remediationNote tells what became of a remediation of the incident's
// drift. A failed apply raised the incident's severity; the integration
// API cannot change an open alert's priority, so the note says so.
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
		b.line(fmt.Sprintf("Severity raised to %s (%s); the open alert keeps its priority.", m.Incident.Severity, priority(m.Incident.Severity)))
	}
	if r.URL != "" {
		b.line(notify.Truncate("Run: "+r.URL, maxLine))
	}
	return b.String()
}

// description lists the incident and its findings, within the limit.
// Findings carry paths, never values.
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
// key; each within 50 characters, at most 20, no duplicates.
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

// validAlias reports whether key can be an alias: the OpsGenie
// notifier's rule, so both accept the same incident keys.
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
