// Package server is driftwatch's HTTP interface: health and readiness
// probes, Prometheus metrics, a JSON API over the configured workspaces
// and their run history, a manual-trigger endpoint guarded by a bearer
// token, and a server-rendered status page for people.
//
// Endpoints:
//
//	GET  /healthz                              liveness, always "ok"
//	GET  /readyz                               readiness from Options.Ready
//	GET  /metrics                              Options.Gatherer via promhttp
//	GET  /api/v1/workspaces                    every configured workspace with its state
//	GET  /api/v1/workspaces/{name}             one workspace, with its findings
//	GET  /api/v1/workspaces/{name}/runs        its runs, newest first (?limit=1..500, default 50)
//	POST /api/v1/workspaces/{name}/runs        queue a run now (bearer token)
//	GET  /api/v1/runs/{id}                     one run, with findings and phases
//	GET  /api/v1/runs/{id}/logs                its log, text or Server-Sent Events (read credential)
//	POST /api/v1/runs/{id}/cancel              cancel a queued or running run (bearer token)
//	GET  /                                     status page
//	GET  /workspaces/{name}                    one workspace's page
//	GET  /runs/{id}                            one run's page, with its log (read credential)
//
// Access: mutating endpoints need the API token as a bearer token. Run
// logs and run pages need a read credential, the API token or the read
// token, as a bearer token or an HTTP Basic password (a browser), unless
// Options.OpenReads; a log that holds attribute values (it starts with
// runlog.ValuesNotice) always needs one. The other reads are open. Every
// route but /healthz and /readyz answers only to allowed Host names
// (hostPolicy: DNS rebinding), and log event streams are capped in
// number and bounded per write.
//
// The server only reads the store. It knows nothing of the scheduler or
// runners: configured workspaces, the trigger and readiness come in as
// functions in Options. Attribute values reach it only in logs that say
// so at their start (findings carry attribute paths only) and the tokens
// never leave it.
package server
