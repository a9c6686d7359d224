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
//	GET  /                                     status page
//	GET  /workspaces/{name}                    one workspace's page
//
// The server only reads the store. It knows nothing of the scheduler or
// runners: configured workspaces, the trigger and readiness come in as
// functions in Options. Attribute values never reach it (findings carry
// attribute paths only) and the API token never leaves it.
package server
