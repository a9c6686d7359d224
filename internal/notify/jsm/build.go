package jsm

import (
	"encoding/json"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/genie"
)

// The bodies are the alert package genie builds (the one OpsGenie's
// notifier sends too), as JSON; what is JSM's own is the requests a
// message makes, the responder and the remediation note's line about the
// priority.

// aliasQuery makes an action's path segment an alias.
const aliasQuery = "identifierType=alias"

// Operations, as errors and logs name them.
const (
	opCreate = "create alert"
	opNote   = "add note to alert"
	opClose  = "close alert"
)

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
	if !genie.ValidAlias(alias) {
		return nil, fmt.Errorf("incident key %q cannot be an alias (want [A-Za-z0-9._-], at most %d characters)", alias, genie.MaxAlias)
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
			err = add(action(opNote, "notes", actionRequest{Source: genie.Source, Note: genie.RenotifyNote(m.Incident)}))
		}
	case notify.EventUpdate:
		err = add(action(opNote, "notes", actionRequest{Source: genie.Source, Note: genie.DeltaNote(m)}))
	case notify.EventRemediation:
		if m.Remediation == nil {
			return nil, fmt.Errorf("message %s: remediation event without its remediation", m.ID)
		}
		err = add(action(opNote, "notes", actionRequest{Source: genie.Source, Note: remediationNote(m)}))
	case notify.EventResolve:
		err = add(action(opClose, "close", actionRequest{Source: genie.Source, Note: genie.CloseNote(m.Incident)}))
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
	a := genie.NewAlert(in)
	req := createRequest{
		Message:     a.Message,
		Alias:       a.Alias,
		Description: a.Description,
		Tags:        a.Tags,
		Details:     a.Details,
		Entity:      a.Entity,
		Source:      a.Source,
		Priority:    a.Priority,
	}
	if in.Team != "" {
		req.Responders = []responder{{Type: "team", Name: in.Team}}
	}
	return req
}

// remediationNote tells what became of a remediation of the incident's
// drift. A failed apply raised the incident's severity; the integration
// API cannot change an open alert's priority, so the note says so.
func remediationNote(m notify.Message) string {
	sev := m.Incident.Severity
	return genie.RemediationNote(m, fmt.Sprintf("Severity raised to %s (%s); the open alert keeps its priority.", sev, genie.Priority(sev)))
}
