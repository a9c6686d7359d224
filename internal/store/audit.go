package store

import (
	"context"
	"time"
)

// The results an audit entry records (AuditEntry.Result).
const (
	// AuditOK: the action was done.
	AuditOK = "ok"
	// AuditDenied: the caller was refused before anything was done (no
	// or an invalid credential, a role too low, a cross-site request or a
	// missing CSRF token, a body too large, not a Slack approver).
	AuditDenied = "denied"
	// AuditError: the caller was allowed, but the action failed or was
	// refused by the daemon (unknown workspace, a conflict, an outage).
	AuditError = "error"
)

// Where an audited action came from (AuditEntry.Source).
const (
	// AuditSourceAPI: an API client (the CLI, curl, automation).
	AuditSourceAPI = "api"
	// AuditSourcePage: driftwatch's own pages, in a signed-in browser.
	AuditSourcePage = "page"
	// AuditSourceSlack: a Slack button (internal/notify/slackinteract).
	AuditSourceSlack = "slack"
)

// AuditEntry is one mutating action someone attempted, allowed or not:
// who, with which role, did what to which target, when, and how it went.
// It never holds a request body, a credential or a header's value.
type AuditEntry struct {
	// ID is assigned by the store (RecordAudit ignores it); it grows
	// with every entry.
	ID int64
	// At is when the action was attempted.
	At time.Time
	// Actor names who acted: a person ("alice"), an API token
	// ("token:ci"), "anonymous", or a Slack user ("slack:U123 (alice)").
	Actor string
	// Method is how the actor was established: "token:<name>", "proxy",
	// "anonymous", "slack" (and more as authentication grows).
	Method string
	// Roles are the roles the actor held (none when refused unsigned).
	Roles []string
	// Action is a stable name: "run.trigger", "run.cancel",
	// "silence.add", "silence.expire", "remediation.approve",
	// "remediation.reject", "remediation.pause", "remediation.resume".
	Action string
	// Target is what was acted on: a workspace name, a run, silence or
	// remediation ID; "" when the action has none (the kill switch) or
	// it is not known (a silence refused before it was made).
	Target string
	// Result is AuditOK, AuditDenied or AuditError.
	Result string
	// Status is the HTTP status answered (0: none, e.g. Slack's buttons).
	Status int
	// Detail says briefly why, for a refusal or an error; never a value
	// from the request. Stores cap it (MaxAuditDetail).
	Detail string
	// Source is AuditSourceAPI, AuditSourcePage or AuditSourceSlack.
	Source string
	// Anonymous marks a request that named nobody and did nothing: a
	// refusal (or failure) of a caller without a verified identity (no
	// credential, an invalid one, identity headers from an untrusted
	// peer, a Slack request without a valid signature). Anyone can make
	// those, so stores aggregate them (one entry per Peer, Action,
	// Source, Result, Status and Detail per minute, counted in Count,
	// without a Target or Roles) and cap them apart: they never evict
	// the entries of identified callers.
	Anonymous bool
	// Peer is where an Anonymous entry came from: the TCP peer's address
	// (an IPv6 peer's /64), never a forwarded-for header; behind a proxy,
	// the proxy's. "" for other entries.
	Peer string
	// Count is how many requests the entry stands for: 1, or more for an
	// aggregated Anonymous entry (whose At is the first of them).
	// RecordAudit reads 0 as 1.
	Count int
}

// MaxAuditDetail caps AuditEntry.Detail, in bytes; stores truncate a
// longer one. Actor and Target are capped at MaxAuditName.
const (
	MaxAuditDetail = 256
	MaxAuditName   = 200
)

// AuditFilter selects audit entries. Zero fields select everything.
type AuditFilter struct {
	// Since: entries at or after it.
	Since time.Time
	// Actor, Action and Target must equal the entry's.
	Actor, Action, Target string
	// Limit caps the entries returned (0: no cap).
	Limit int
}

// AuditReader reads the audit log. It is optional: the server finds it
// on its Store with a type assertion. store/sqlite implements it.
type AuditReader interface {
	// AuditEntries returns the entries f selects, newest first (by At,
	// then by ID).
	AuditEntries(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// AuditStore keeps the audit log: entries are appended, never changed
// (but for an aggregated Anonymous entry's Count), and pruned with the
// run history (store.max_age) and beyond a fixed count per kind, which
// is enforced as entries are recorded; store/sqlite documents its limits.
type AuditStore interface {
	AuditReader
	// RecordAudit appends e, capping its Detail, Actor and Target; an
	// Anonymous e is added to the count of its minute's entry, if any.
	RecordAudit(ctx context.Context, e AuditEntry) error
}

// ReplayStore remembers the Slack request signatures seen within the
// replay window, so that a replayed request is refused after a restart
// too. It is optional: the daemon finds it on its Store with a type
// assertion. store/sqlite implements it.
type ReplayStore interface {
	// RememberSignature records sig as seen until until, and reports
	// whether it had already been seen (and had not expired at now).
	// Signatures expired at now are forgotten.
	RememberSignature(ctx context.Context, sig string, until, now time.Time) (seen bool, err error)
}

// ReplayOf is st's memory of Slack request signatures, or nil when st
// keeps none (the handler then keeps them in memory only).
func ReplayOf(st Store) ReplayStore {
	if r, ok := st.(ReplayStore); ok {
		return r
	}
	return nil
}
