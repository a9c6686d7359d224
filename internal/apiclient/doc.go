// Package apiclient is the client side of the daemon's JSON API: the HTTP
// calls the driftwatch CLI makes to a running daemon (`driftwatch run`,
// `logs`, `cancel`, `approve`, `reject`, `silence`, `accept`, `groups`),
// one method each on Client (Adopt is for other clients: `driftwatch
// adopt` runs locally):
//
//	Trigger       POST   /api/v1/workspaces/{name}/runs        API token
//	GetRun        GET    /api/v1/runs/{id}                     no credential
//	Log           GET    /api/v1/runs/{id}/logs                read credential, if a token file is set
//	FollowLog     GET    /api/v1/runs/{id}/logs (event stream) read credential, if a token file is set
//	Cancel        POST   /api/v1/runs/{id}/cancel              API token
//	Approve       POST   /api/v1/remediations/{id}/approve     API token
//	Reject        POST   /api/v1/remediations/{id}/reject      API token
//	ListSilences  GET    /api/v1/silences                      no credential
//	AddSilence    POST   /api/v1/silences                      API token
//	ExpireSilence DELETE /api/v1/silences/{id}?by=WHO          API token
//	ListGroups    GET    /api/v1/groups[?all=true]             read credential, if a token file is set
//	GetGroup      GET    /api/v1/groups/{id}                   read credential, if a token file is set
//	Accept        POST   /api/v1/workspaces/{name}/accept      API token
//	GetAcceptance GET    /api/v1/acceptances/{id}              API token
//	Adopt         POST   /api/v1/workspaces/{scan}/adopt       API token (waits for the adoption)
//
// It owns the client's side of the wire: URLs, methods, headers, the
// decoding of answers (the Server-Sent Events of a followed log among
// them) and the run status vocabulary the API speaks (Status, Counts:
// drift's nouns plus the run states). The bodies themselves are
// internal/server/apitypes', the types the daemon writes: Queued,
// Cancelled, Remediation, Silence and MaintenanceWindow are those types,
// Run, Silences, Groups and Group add the whole answer (Raw). An answer with an
// unexpected status is a *StatusError carrying the status and the API's
// reason; errors.Is matches it against ErrUnauthorized, ErrForbidden,
// ErrNotFound, ErrConflict and ErrUnavailable.
//
// The token is read from its file on each call that sends it, so a
// rotated file is picked up. A file that cannot be read, or (Trigger, the
// silence calls, the logs and the groups) that does not hold one
// non-empty line, is a
// *TokenFileError before any request is made; Cancel, Approve and Reject send the file's
// trimmed content as it is, as the CLI always has. The token goes in an
// Authorization header and nowhere else: no error, and no reason of the
// daemon repeated in one, shows it.
//
// It must not touch what belongs to its callers or to the daemon: no
// flags, no output text beyond error values, no exit codes (cmd/driftwatch
// formats and decides), and no import of the daemon's packages (server,
// store, app, runlog, ...) but drift, the shared vocabulary, and
// server/apitypes, the API's bodies (a leaf; a rule in .golangci.yml
// keeps both so). The daemon may be another version: decoding ignores
// fields it does not know. Tests run against the real internal/server.
package apiclient
