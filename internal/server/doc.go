// Package server is driftwatch's HTTP interface: health and readiness
// probes, Prometheus metrics, a JSON API over the configured workspaces
// and their run history and trends, mutating endpoints guarded by roles,
// and server-rendered status and Trends pages for people.
//
// Endpoints:
//
//	GET  /healthz                              liveness, always "ok"
//	GET  /readyz                               readiness from Control.Ready
//	GET  /metrics                              Options.Gatherer via promhttp
//	GET  /api/v1/status                        version, readiness, sandbox
//	GET  /api/v1/whoami                        who the caller is, its roles, its CSRF token
//	GET  /api/v1/notifiers                     alert delivery per notifier
//	GET  /api/v1/workspaces                    every configured workspace with its state; with ?status=,label=,owner=,q=,sort=,page=,per_page= one filtered page (list.go)
//	GET  /api/v1/workspaces/{name}             one workspace, with its findings
//	GET  /api/v1/workspaces/{name}/runs        its runs, newest first (?limit=1..500, default 50)
//	POST /api/v1/workspaces/{name}/runs        queue a run now (operator)
//	GET  /api/v1/runs/{id}                     one run, with findings and phases
//	GET  /api/v1/runs/{id}/logs                its log, text or Server-Sent Events (viewer, logs)
//	POST /api/v1/runs/{id}/cancel              cancel a queued or running run (operator)
//	GET  /api/v1/silences                      silences not yet ended, and maintenance windows
//	POST /api/v1/silences                      add a silence (operator)
//	DELETE /api/v1/silences/{id}?by=WHO        end a silence now (operator)
//	GET  /api/v1/stats                         trends per UTC day (?since=30d|Nh, label=k=v..., owner=)
//	GET  /                                     status page (the same filters, 50 a page)
//	GET  /workspaces/{name}                    one workspace's page
//	GET  /runs/{id}                            one run's page, with its log (viewer, logs)
//	GET  /silences                             what holds notifications now, silences, windows
//	GET  /trends                               the Trends page: charts of /api/v1/stats
//	GET  /auth/login?next=PATH                 oidc mode: sign in with the provider
//	GET  /auth/callback                        oidc mode: the provider's redirect
//	POST /auth/logout                          oidc mode: end the session (CSRF)
//	GET  /api/v1/audit                         the audit log, newest first (?since=Nd|Nh, actor, action, target, limit=1..1000, default 100)
//	GET  /audit                                the audit log's page
//
// The silence endpoints answer 501 unless the Control implements
// SilenceControl (silences and maintenance windows); with it, the status
// and workspace pages also say whose notifications are held, until when
// and why. The trend endpoints answer 501 unless Options.Store implements
// store.StatsReader. Every request to a mutating route, refused or not, is
// recorded through Options.Audit (audit.go), anonymous refusals rate
// limited by an AuditLimiter (auditlimit.go); the audit endpoints answer
// 501 unless Options.Store implements store.AuditReader.
//
// and, when the Control implements RemediationControl, the remediation
// API (/api/v1/remediations..., /api/v1/remediation, the approve, reject,
// pause and resume calls: approver, admin for the kill switch) and
// /remediations/{id}.
//
// # The seam
//
// New takes Options: plain data (the store, the log store, the metrics
// gatherer, the logger, the config file's server section as it is
// (config.Server: token files, host names, URLs, listen address, TLS),
// the Kubernetes callback URL, version, sandbox, extra handlers, the
// clock) and one Control, which the daemon implements.
// Control is everything the server asks of the running daemon: the
// configured workspaces, readiness, queueing and cancelling a run, the
// live log of a run in flight and notifier health. Remediation is the
// optional RemediationControl on the same value, found with a type
// assertion, so a daemon without it simply has no remediation routes.
//
// Outcomes cross the seam as errors this package defines: ErrUnknownWorkspace,
// ErrBusy (a *BusyError names the busy run), ErrUnavailable and
// ErrNotRunning, plus store.ErrNotFound, store.ErrConflict, ErrHashMismatch
// and errors.ErrUnsupported. The daemon maps its scheduler's and run
// registry's errors onto them (internal/app/control.go); the server maps
// them onto status codes and never learns another package's sentinels.
//
// # What the server owns, and what it must not touch
//
// It owns routing, authentication and authorization, the Host allowlist,
// rendering (JSON and HTML), status codes and the limits on log streams.
// It only reads the store: every write (queueing, cancelling, approving a
// remediation) goes through the Control, which decides and records. It
// knows nothing of the scheduler, runners, notifiers or leader election,
// and must not import them (schedule, runner, audit, notify, app). Of the
// config file it knows only its own section, config.Server, taken whole
// (config is a leaf of plain data: importing it pulls in nothing else);
// it never loads or validates the file. The Control is its only way to
// the rest of the daemon, and Options.Handlers (routes the daemon owns,
// such as the Kubernetes result callback) are mounted as they are, behind
// the same Host allowlist and access log.
//
// Access: every route is registered with its rule (roles.go): public
// (probes, metrics), self-authenticated (Options.Handlers), or a least
// role. viewer < operator < admin; approver is a viewer who also decides
// remediations (optionally of some workspaces only). The guard
// authenticates (API tokens, as a bearer token or, for reads, an HTTP
// Basic password; in proxy mode a trusted proxy's headers; in oidc mode
// an OpenID Connect session cookie, oidc.go), puts the
// Identity in the request's context (IdentityFrom), and refuses with 401,
// 403 or 500. Run logs and run pages need a credential unless anonymous
// reads are opened (server.auth.anonymous_role viewer, open_reads); a log
// that holds attribute values (it starts with runlog.ValuesNotice) always
// needs one. Mutating requests authenticated by the proxy or a session
// cookie need a CSRF token and a same-origin request. Every response carries nosniff, a CSP
// with frame-ancestors 'none' and no-referrer; mutating bodies are capped
// at 64 KiB. Every route but /healthz and /readyz answers only to allowed
// Host names (hostPolicy: DNS rebinding), and log event streams are
// capped in number and bounded per write.
//
// Attribute values reach the server only in logs that say so at their
// start (findings carry attribute paths only), and the tokens never leave
// it.
package server
