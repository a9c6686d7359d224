// Package notify is the seam between incidents and the systems that page
// people: the Message a notifier delivers, the Notifier interface every
// vendor package implements (slack, opsgenie, jsm, pagerduty, teams,
// github, gitlab, email, webhook), and the error type
// that tells the outbox whether and when to retry. Messages carry no
// attribute values: findings are addresses, actions and attribute paths.
// Vendor packages never import each other, the store or the config.
//
// What every vendor shares lives here once: Open (the start of a New:
// logger, Validate, the secret file), Sender (one HTTP attempt with its
// timeout, Retry-After, redaction and transport errors; Attempt and
// StatusError for client libraries; Interrupted, a done ctx's retryable
// error; Answer, a JSON answer read leniently), APIError (a vendor's error
// answer, its errors and hint in the vendor's form), CAClient (a notifier's
// ca_file, through cafile), Message.Check, RemediationResult.Title and
// the texts vendors word alike, parameterised by what differs: EventNote
// and EventWord (what a message reports), StableTitle and StatusText,
// Capped ("and N more"), Delta.Parts, and CodeSpan and Fence (Markdown,
// for github and gitlab).
// The vendors' settings are their <type>cfg leaves
// (docs/architecture/notify.md).
//
// Severity and its parser live in the leaf internal/notify/severity (one
// list of severities, which config also validates against); notify names
// them as Severity, Severity* and ParseSeverity.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify/severity"
)

// Event is what happened to an incident.
type Event string

// Incident events.
const (
	EventOpen     Event = "open"     // first observation (after confirm_after)
	EventUpdate   Event = "update"   // the findings fingerprint changed
	EventResolve  Event = "resolve"  // a clean (or recovered) run
	EventRenotify Event = "renotify" // still open after renotify_after
	// EventRemediation reports a remediation of the workspace's drift on
	// its open drift incident; Message.Remediation says what happened.
	EventRemediation Event = "remediation"
)

// Class is the kind of incident; a workspace has at most one open incident
// per class.
type Class string

// Incident classes.
const (
	ClassDrift     Class = "drift"     // drift (and pending changes if the workspace opts in)
	ClassForbidden Class = "forbidden" // GitOps-owned resource types managed by Terraform
	// ClassValidation is failing or unknown checks of the configuration
	// (findings of kind check).
	ClassValidation Class = "validation"
	ClassErrored    Class = "errored" // errored_after consecutive failed runs
)

// Severity of an incident, highest first. OpsGenie maps it to P1..P5.
// It is severity.Severity: the leaf internal/notify/severity holds the
// list, so config validates severities without importing notify.
type Severity = severity.Severity

// Severities.
const (
	SeverityCritical = severity.Critical
	SeverityHigh     = severity.High
	SeverityModerate = severity.Moderate
	SeverityLow      = severity.Low
	SeverityInfo     = severity.Info
)

// ParseSeverity validates s (severity.Parse).
func ParseSeverity(s string) (Severity, error) { return severity.Parse(s) }

// Incident is the value-free description of one incident at the time of a
// message.
type Incident struct {
	// Key is stable for a workspace and class: [a-z0-9-], no "/", usable as
	// an OpsGenie alias and a Slack metadata key.
	Key       string
	Workspace string
	Class     Class
	Severity  Severity
	Owner     string
	Team      string // responder team from the route (OpsGenie)
	Labels    map[string]string
	// Since is when the incident opened (first observation).
	Since    time.Time
	Findings []drift.Finding // counted findings only, sorted
	Counts   drift.Counts
	Error    string // one-line reason, errored class only
	// Reason says why a resolve was not a clean run's (e.g. "workspace
	// removed"); empty otherwise.
	Reason string `json:",omitempty"`
	RunID  string // the run that caused this message
	URL    string // the workspace's status page, if server.external_url is set
	// Escalated is how many steps failed remediations raised Severity
	// above the policy's (0: not raised). It lasts until the incident
	// resolves.
	Escalated int
	// Group is set on a group incident's messages: drift of several
	// workspaces that shares one cause, alerted as one. Workspace then is
	// the cause ("dwtest_file content (string → string)"), the same
	// through the incident's life, and each finding's Address is
	// "WORKSPACE: ADDRESS".
	Group *Group `json:",omitempty"`
}

// Group is what a group incident's message says of its group.
type Group struct {
	ID    string
	Cause string // provider, commit or shape
	// Title says the cause and the counts: "hashicorp/aws 5.80.0 →
	// 5.81.0: tags_all changed on 40 resources in 12 workspaces".
	Title      string
	Workspaces []string // the members' workspaces, sorted
}

// Delta is what changed since the previous message of an open incident.
type Delta struct {
	Added   []drift.Finding
	Removed []drift.Finding
	Changed []drift.Finding // same address, different attributes/action
}

// DeltaPart is one of a Delta's lists and the word for it.
type DeltaPart struct {
	What     string // "added", "removed" or "changed"
	Findings []drift.Finding
}

// Parts are d's lists in the order notifiers show them: added, removed,
// changed.
func (d *Delta) Parts() []DeltaPart {
	return []DeltaPart{{"added", d.Added}, {"removed", d.Removed}, {"changed", d.Changed}}
}

// Message is one notification to deliver. ID is unique per message and
// stable across retries, so notifiers can make delivery idempotent.
type Message struct {
	ID       string
	Event    Event
	Incident Incident
	Delta    *Delta // EventUpdate only
	// Remediation is set on EventRemediation only.
	Remediation *Remediation
	At          time.Time
	// PrevSeverity and PrevEscalated are the incident's Severity and
	// Escalated on its previous message (empty on open): a route's
	// min_severity sees the incident cross it.
	PrevSeverity  Severity `json:",omitempty"`
	PrevEscalated int      `json:",omitempty"`
}

// RemediationResult is what a remediation message reports.
type RemediationResult string

// Remediation results. Proposals: awaiting_approval (mode approve: a person
// approves with `driftwatch approve ID`), approved (mode auto: it applies
// now), refused (the safety envelope refused it; Reason says why).
// Outcomes of an apply: applied, failed, verification_failed, refused
// (nothing applied, e.g. the plan changed since approval).
const (
	RemediationAwaitingApproval   RemediationResult = "awaiting_approval"
	RemediationApproved           RemediationResult = "approved"
	RemediationApplied            RemediationResult = "applied"
	RemediationFailed             RemediationResult = "failed"
	RemediationVerificationFailed RemediationResult = "verification_failed"
	RemediationRefused            RemediationResult = "refused"
)

// Failed reports whether r is a failed apply (failed or
// verification_failed): such a message raises the incident's severity.
func (r RemediationResult) Failed() bool {
	return r == RemediationFailed || r == RemediationVerificationFailed
}

// Title is what became of a remediation as a notifier's heading says it:
// "Remediation approved", "Remediation verification failed". A result of
// no known kind is shown through clean (the vendor's own escaping and
// bounds).
func (r RemediationResult) Title(clean func(string) string) string {
	switch r {
	case RemediationAwaitingApproval:
		return "Remediation awaiting approval"
	case RemediationApproved:
		return "Remediation approved"
	case RemediationApplied:
		return "Remediation applied"
	case RemediationFailed:
		return "Remediation failed"
	case RemediationVerificationFailed:
		return "Remediation verification failed"
	case RemediationRefused:
		return "Remediation refused"
	}
	return "Remediation " + clean(string(r))
}

// Remediation is the value-free description of a remediation in a
// message: addresses and counts, never an attribute value.
type Remediation struct {
	ID     string
	Mode   string // approve or auto
	Result RemediationResult
	// Reason is one line: why it was refused or failed, or what is left
	// after a failed verification.
	Reason string
	// Resources is how many resources the change set reverts.
	Resources int
	// ApplyRunID is the run (trigger "remediate") that applied it, if any.
	ApplyRunID string
	// ExpiresAt is when an awaiting_approval remediation expires (zero:
	// never).
	ExpiresAt time.Time
	// ChangeSetHash identifies the change set an awaiting_approval
	// remediation proposes: an approval from the message (Slack's
	// Approve button) approves that change set and no other.
	ChangeSetHash string `json:",omitempty"`
	// URL is the apply run's page, if server.external_url is set.
	URL string
}

// Check reports a message no notifier can deliver: an unknown event, or
// a remediation event without its remediation.
func (m Message) Check() error {
	switch m.Event {
	case EventOpen, EventUpdate, EventRenotify, EventResolve:
	case EventRemediation:
		if m.Remediation == nil {
			return fmt.Errorf("message %s: remediation event without its remediation", m.ID)
		}
	default:
		return fmt.Errorf("unknown event %q", m.Event)
	}
	return nil
}

// Notifier delivers messages to one destination.
type Notifier interface {
	// Name is the configured instance name (e.g. "slack-oncall").
	Name() string
	// Notify delivers m. state is what this notifier stored for the
	// incident after its previous delivery (nil at first), e.g. the Slack
	// parent message's channel and ts; the returned state replaces it.
	// saveState persists state immediately, before Notify returns, for
	// notifiers that must record a side effect (a Slack parent ts) before
	// doing more work that could fail. Errors are retried only if they are
	// (or wrap) a *RetryableError.
	Notify(ctx context.Context, m Message, state []byte, saveState func([]byte) error) (newState []byte, err error)
}

// RetryableError marks a transient failure: network errors, 5xx, 429.
// After, if set, is the server's Retry-After.
type RetryableError struct {
	Err   error
	After time.Duration
}

func (e *RetryableError) Error() string { return e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// Retryable wraps err as retryable after d (0: the outbox's backoff).
func Retryable(err error, after time.Duration) error {
	return &RetryableError{Err: err, After: after}
}

// IsRetryable reports whether err should be retried and after how long the
// server asked to wait (0 if it did not say).
func IsRetryable(err error) (bool, time.Duration) {
	var re *RetryableError
	if errors.As(err, &re) {
		return true, re.After
	}
	return false, 0
}

// ParseRetryAfter reads a Retry-After header value, delay-seconds or an
// HTTP date (relative to now), as the delay for Retryable: 0 if v is empty,
// negative, unparsable or a date not after now.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// KeptState is what a notifier that keeps no state of its own returns
// after delivering m: state as it was, and nil once the incident is
// resolved (nothing is left to keep).
func KeptState(m Message, state []byte) []byte {
	if m.Event == EventResolve {
		return nil
	}
	return state
}
