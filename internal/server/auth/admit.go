package auth

import (
	"fmt"
	"net/http"
	"strings"
)

// Need is what a route asks of its callers: the least role, and whether
// it shows run logs (Logs: closed to callers without a credential
// unless reads are opened) or is /metrics (Metrics: the scrape token
// may read it too).
type Need struct {
	Role    Role
	Logs    bool
	Metrics bool
}

// Refusal is a request the guard refuses: its status, the heading of
// the page that says so and the sentence the page and the API's error
// both say (without its capital and full stop). API marks a refusal
// answered as the API's error even on a page route (those of mutating
// calls, kept from the single-token days).
type Refusal struct {
	Code    int
	Heading string
	Message string
	API     bool
}

// Refusals of mutating calls (the API's, kept from the single-token days).
const (
	msgMutationsClosed = "mutating endpoints are disabled: no API token is configured on this driftwatch"
	msgBearerMissing   = "missing bearer token"
	msgBearerInvalid   = "invalid bearer token"
	msgUntrusted       = "identity headers are accepted only from the proxy (server.auth.proxy.trusted_networks)"
	// Refusals of reads other than run logs.
	msgViewClosed = "this driftwatch's pages and API need a credential, and none is configured: " +
		"set server.auth (tokens or roles), server.read_token_file, or server.auth.anonymous_role: viewer"
	msgViewMissing = "reading needs a credential: an API token, as a bearer token or as the password of HTTP Basic auth " +
		"(any user name), or a sign-in through the proxy"
	msgViewInvalid = "invalid credential: it is none of the configured API tokens"
)

// Read refusals, for the API and (as plain sentences) the pages.
const (
	msgReadsClosed = "run logs and run pages need a read credential, and none is configured: " +
		"set server.read_token_file (or server.token_file), or server.open_reads: true to open them"
	msgReadMissing = "run logs and run pages need a read credential: the API token or the read token " +
		"(server.read_token_file), as a bearer token or as the password of HTTP Basic auth (any user name)"
	msgReadInvalid = "invalid read credential: it is neither the API token nor the read token"
	msgValuesNoTok = "this log holds the plan's attribute values (log_plan_text): it is served only to a reader " +
		"with a credential, and none is configured: set server.read_token_file or server.token_file"
	msgValues = "this log holds the plan's attribute values (log_plan_text): it is served only with a read credential " +
		"(the API token or the read token), even with server.open_reads"
)

// Admit establishes who makes r and whether they may use a route that
// needs need: the identity (anonymous for a caller without a credential
// who may read anyway), what the credential came to, and the refusal
// (nil: admitted). A refusal is 401 for no or an invalid credential, 403
// for a role too low, for a proxy header from an untrusted peer, or for
// a route no configured credential could use (saying what to
// configure). A token whose file cannot be read is revoked
// (authenticate).
func (a *Authenticator) Admit(r *http.Request, need Need) (Identity, Outcome, *Refusal) {
	if need.Metrics && a.metricsToken(r) {
		return Identity{Name: "metrics", Method: MethodTokenPrefix + "metrics"}, OutcomeOK, nil
	}
	id, out := a.authenticate(r)
	switch {
	case out == OutcomeUntrusted:
		return id, out, &Refusal{Code: http.StatusForbidden, Heading: "Not signed in", Message: msgUntrusted}
	case out == OutcomeOK && id.Has(need.Role):
	case a.anonymousMay(need.Role, need.Logs):
		// A caller without a credential, or without a role for this,
		// who may read anyway; an invalid credential does not close
		// an open read.
		if out != OutcomeOK {
			id = Identity{Method: MethodAnonymous}
		}
	case out == OutcomeOK:
		return id, out, roleRefusal(id, need.Role)
	case !a.canGrant(need.Role) && (!need.Metrics || a.metrics.file == ""):
		return id, out, a.closedRefusal(need)
	default:
		return id, out, unauthenticatedRefusal(r, need, out == OutcomeInvalid)
	}
	return id, out, nil
}

// roleRefusal refuses an authenticated caller whose roles do not allow
// the route: 403, saying what it needs.
func roleRefusal(id Identity, need Role) *Refusal {
	var msg string
	if len(id.Roles) == 0 {
		msg = fmt.Sprintf("you are signed in as %s, but no role is granted to you on this driftwatch: "+
			"ask its operators to add you to server.auth.roles", id.Name)
	} else {
		msg = fmt.Sprintf("this needs the %s role; %s has %s", need, id.Actor(), joinRoles(id.Roles))
	}
	return &Refusal{Code: http.StatusForbidden, Heading: "Not allowed", Message: msg}
}

// joinRoles is rs as "viewer, operator".
func joinRoles(rs []Role) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return strings.Join(out, ", ")
}

// closedRefusal refuses a route no configured credential could ever
// use: 403, saying what to configure.
func (a *Authenticator) closedRefusal(need Need) *Refusal {
	switch {
	case need.Logs:
		return readRefusal(http.StatusForbidden, msgReadsClosed)
	case need.Role == RoleViewer:
		return &Refusal{Code: http.StatusForbidden, Heading: "This driftwatch is closed", Message: msgViewClosed}
	case len(a.tokens) == 0 && len(a.roles) == 0:
		return &Refusal{Code: http.StatusForbidden, Message: msgMutationsClosed, API: true}
	}
	return &Refusal{Code: http.StatusForbidden, API: true, Message: fmt.Sprintf(
		"this needs the %s role, and no credential on this driftwatch has it (server.auth)", need.Role)}
}

// unauthenticatedRefusal refuses a request without a usable credential:
// 401, with a challenge.
func unauthenticatedRefusal(r *http.Request, need Need, invalid bool) *Refusal {
	switch {
	case need.Logs && invalid:
		return readRefusal(http.StatusUnauthorized, msgReadInvalid)
	case need.Logs:
		return readRefusal(http.StatusUnauthorized, msgReadMissing)
	case need.Role != RoleViewer:
		if _, ok := bearer(r.Header.Get("Authorization")); ok {
			return &Refusal{Code: http.StatusUnauthorized, Message: msgBearerInvalid, API: true}
		}
		return &Refusal{Code: http.StatusUnauthorized, Message: msgBearerMissing, API: true}
	case invalid:
		return &Refusal{Code: http.StatusUnauthorized, Heading: "Sign in to read this page", Message: msgViewInvalid}
	}
	return &Refusal{Code: http.StatusUnauthorized, Heading: "Sign in to read this page", Message: msgViewMissing}
}

// ValuesRefusal refuses a log that holds attribute values to a reader
// without a credential (Reader): 403 when no credential could read it,
// else 401.
func (a *Authenticator) ValuesRefusal() Refusal {
	if !a.canGrant(RoleViewer) {
		return *readRefusal(http.StatusForbidden, msgValuesNoTok)
	}
	return *readRefusal(http.StatusUnauthorized, msgValues)
}

// readRefusal refuses a read of a run's log or page.
func readRefusal(code int, msg string) *Refusal {
	heading := "Sign in to read this run"
	if code == http.StatusForbidden {
		heading = "Run pages are not open"
	}
	return &Refusal{Code: code, Heading: heading, Message: msg}
}
