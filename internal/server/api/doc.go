// Package api is the JSON API's handlers: one method of API per route
// (Workspaces, Run, Trigger, RunLogs, Cancel, Silences, Remediations,
// Groups, Stats, Audit, Whoami, Sessions, ...), mounted by the server,
// each behind its rule (internal/server's route table). Bodies are
// internal/server/apitypes' types, written by respond; what they show is
// read through view.Source, and every change goes through the daemon's
// Control, whose errors each handler maps onto a status code.
//
// A run's log is text, or Server-Sent Events (replay, live lines, then
// an "end" event with the verdict) while it runs or when asked for;
// MaxStreams caps the streams open at once (503 with Retry-After beyond)
// and StreamWriteTimeout bounds each write, replacing the server's
// WriteTimeout so a long plan is not cut.
//
// It writes no HTML (server/pages does) and decides no access (the guard
// has, before a handler runs; a handler reads auth.IdentityFrom to name
// who acted, or to check an approver's scope). Of the server's rooms it
// imports apitypes, auth, control, respond and view, never pages;
// besides them store, stats, runlog and drift.
package api
