// Package apitypes holds the JSON bodies of driftwatch's HTTP API, as
// they cross the wire: what the daemon writes (internal/server/api) and
// what the CLI decodes (internal/apiclient), one type each, so the two
// cannot drift apart. The json tags are the API: never rename one.
//
//	Workspace, WorkspaceDetail, WorkspacePage   GET /api/v1/workspaces[/{name}]
//	Finding, Incident                           parts of a workspace and a run
//	Run, RunDetail, Phase                       GET /api/v1/workspaces/{name}/runs, /api/v1/runs/{id}
//	Queued, Cancelled, Error                    a trigger's and a cancel's answers; every error
//	LogEnd                                      the end event of a run's log stream
//	Silence, MaintenanceWindow, SilenceList     GET /api/v1/silences
//	SilenceBody                                 POST /api/v1/silences
//	Remediation, Decision                       the remediation API and an approval's body
//	Group, GroupMember, GroupList               GET /api/v1/groups[/{id}]
//	AuditEntry, Session                         GET /api/v1/audit, /api/v1/sessions
//	NotifierStatus, SandboxStatus               GET /api/v1/notifiers, /api/v1/status
//
// Time is a time as the API writes most of them: RFC 3339 in UTC to the
// second, null when zero. A few fields (an incident's, a remediation's,
// an audit entry's) are time.Time, as they always were; a group's are
// time.Time too, left out when zero.
//
// It is a leaf: it imports drift (statuses, counts, kinds) and the
// standard library only, so the daemon and its client share it without
// sharing anything else (a rule in .golangci.yml keeps it so). Handlers,
// conversions from the store and the decoding of answers belong to its
// two users, not here.
package apitypes
