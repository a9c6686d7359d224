package opsgenie

import (
	"fmt"
	"slices"

	"github.com/opsgenie/opsgenie-go-sdk-v2/alert"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/genie"
)

// The request builders wrap the alert body package genie builds (the one
// JSM's notifier sends too) into the SDK's requests; what is OpsGenie's
// own is the responders, the priority action and the remediation note's
// line about the raised priority.

// priority maps s to P1..P5; an unknown severity is P3, the SDK's default.
func priority(s notify.Severity) alert.Priority {
	return alert.Priority(genie.Priority(s))
}

// buildCreate is the create request for an open or renotify message.
// extra responders (from the config) follow the route's team.
func buildCreate(m notify.Message, extra []Responder) *alert.CreateAlertRequest {
	in := m.Incident
	a := genie.NewAlert(in)
	req := &alert.CreateAlertRequest{
		Message:     a.Message,
		Alias:       a.Alias,
		Description: a.Description,
		Responders:  responders(in.Team, extra),
		Tags:        a.Tags,
		Details:     a.Details,
		Entity:      a.Entity,
		Source:      a.Source,
		Priority:    alert.Priority(a.Priority),
	}
	if m.Event == notify.EventRenotify {
		req.Note = genie.RenotifyNote(in)
	}
	return req
}

// buildNote is the add-note request for an update message (the delta)
// or a remediation message (what became of the remediation).
func buildNote(m notify.Message) *alert.AddNoteRequest {
	note := genie.DeltaNote(m)
	if m.Event == notify.EventRemediation {
		note = remediationNote(m)
	}
	return &alert.AddNoteRequest{
		IdentifierType:  alert.ALIAS,
		IdentifierValue: m.Incident.Key,
		Source:          genie.Source,
		Note:            note,
	}
}

// remediationNote tells what became of a remediation of the incident's
// drift: "Remediation failed (remediation ID, run ID): reason. Priority
// raised to P2." A failed apply raised the incident's severity, and the
// alert's priority is raised with it (buildPriority, sent first).
func remediationNote(m notify.Message) string {
	sev := m.Incident.Severity
	return genie.RemediationNote(m, fmt.Sprintf("Priority raised to %s (severity %s).", priority(sev), sev))
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
	return &alert.CloseAlertRequest{
		IdentifierType:  alert.ALIAS,
		IdentifierValue: m.Incident.Key,
		Source:          genie.Source,
		Note:            genie.CloseNote(m.Incident),
	}
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
