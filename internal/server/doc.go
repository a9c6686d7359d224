// Package server is driftwatch's HTTP interface: health and readiness
// probes, Prometheus metrics, the JSON API over the configured
// workspaces, their runs, group incidents, silences, remediations, trends
// and audit log, and the server-rendered pages for people. This package
// is the house's front door: Options, New, Run and Serve, the route
// table (routes.go: every route with its access rule), the guard that
// admits or refuses each request and records every mutating one in the
// audit log (with AuditLimiter rate-limiting anonymous refusals), and the
// middleware around all of it: the access log, the Host allowlist (DNS
// rebinding), security headers. The rooms behind it:
//
//	control   the seam: what the server asks of the daemon (Control, ...)
//	auth      who makes a request and what they may: tokens, proxy, OIDC, CSRF
//	view      what the API and the pages read, and the queries both parse
//	api       the JSON API's handlers
//	pages     the HTML pages, their templates and charts
//	apitypes  the API's JSON bodies, shared with internal/apiclient
//	respond   JSON, text, errors and body limits, for every room
//
// docs/architecture/server.md draws how they stand on one another.
//
// # The seam
//
// New takes Options: plain data (the store, the log store, the metrics
// gatherer, the logger, the config file's server section as it is,
// version, sandbox, extra handlers, the clock) and one Control, which the
// daemon implements; remediation and silences are optional sides of the
// same value (control.Daemon builds one from the daemon's parts). Outcomes
// cross the seam as the errors control names (schedule/refusal's); the
// server maps them onto status codes. The seam's types are control's,
// auth's and apitypes' (seam.go names them here too), so the daemon
// imports this package alone.
//
// # What the server must not touch
//
// It only reads the store: every write (queueing, cancelling, silencing,
// approving) goes through the Control, which decides and records. It
// knows nothing of the scheduler, runners, notifiers or leader election
// and must not import them (schedule, run, runner, pipeline, notify,
// remediation, app: a rule in .golangci.yml). Of the config file it knows
// only config.Server, taken whole; it never loads or validates the file.
// Options.Handlers (routes the daemon owns, such as the Kubernetes result
// callback) are mounted as they are, behind the same Host allowlist and
// access log, and authenticate themselves.
//
// Every response carries nosniff, a CSP with frame-ancestors 'none' and
// no-referrer; mutating bodies are capped at 64 KiB; every route but
// /healthz and /readyz answers only to allowed Host names; log event
// streams are capped in number and bounded per write. Attribute values
// reach the server only in logs that say so at their start, and the
// tokens never leave it.
package server
