// Package genie builds the alert body OpsGenie and Jira Service
// Management (JSM) share. JSM's alerts are OpsGenie's alert model, and
// both notifiers map an incident to an alert the same way, so the
// mapping lives here once: the field limits, the severity to P1..P5
// priority mapping, the alias rule, the create body's fields (NewAlert:
// message, alias, description, tags, details, entity, source, priority)
// and the notes (RenotifyNote, DeltaNote, RemediationNote, CloseNote),
// each within its limit: findings that do not fit are cut whole and
// counted ("… and N more").
//
// It returns plain types (strings, slices, maps and the plain Alert
// struct); package opsgenie wraps them into its SDK's requests and
// package jsm into its JSON bodies, adding what differs: responders, and
// the one line of a failed remediation's note that says what became of
// the alert's priority (a parameter of RemediationNote).
//
// It is pure: no I/O, no clock. It must not import config, store, or any
// notify vendor package (opsgenie, jsm, ...) or vendor SDK; the vendor
// packages import it, never each other.
package genie
