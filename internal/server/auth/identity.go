package auth

import (
	"context"
	"net/http"
	"slices"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/server/control"
)

// Role is what a caller may do. viewer < operator < admin; approver is a
// viewer who may also approve and reject remediations; admin may do
// everything (and approve anywhere).
type Role string

// The roles, as server.auth names them.
const (
	// RoleViewer reads: pages, the read API, run logs.
	RoleViewer Role = config.RoleViewer
	// RoleOperator also queues and cancels runs and adds and ends
	// silences.
	RoleOperator Role = config.RoleOperator
	// RoleApprover also approves and rejects remediations (of the
	// workspaces its scope holds).
	RoleApprover Role = config.RoleApprover
	// RoleAdmin may do everything: also the remediation kill switch.
	RoleAdmin Role = config.RoleAdmin
)

// Grants reports whether holding r allows what need allows.
func (r Role) Grants(need Role) bool {
	switch r {
	case RoleAdmin:
		return true
	case RoleOperator:
		return need == RoleViewer || need == RoleOperator
	case RoleApprover:
		return need == RoleViewer || need == RoleApprover
	case RoleViewer:
		return need == RoleViewer
	}
	return false
}

// Valid reports one of the four roles.
func (r Role) Valid() bool {
	return r == RoleViewer || r == RoleOperator || r == RoleApprover || r == RoleAdmin
}

// How an identity was established (Identity.Method).
const (
	// MethodProxy: an authenticating reverse proxy's trusted headers.
	MethodProxy = "proxy"
	// MethodOIDC: the session cookie of an OpenID Connect sign-in.
	MethodOIDC = "oidc"
	// MethodAnonymous: no credential.
	MethodAnonymous = "anonymous"
	// MethodTokenPrefix, then the token's name: an API token.
	MethodTokenPrefix = "token:"
)

// Identity is who makes a request: established by the server's
// authentication (API tokens; a proxy's headers; an OpenID Connect
// session cookie) and put in the request's
// context for the handlers (IdentityFrom).
type Identity struct {
	// Name is the person (proxy: the user header, else the email; oidc:
	// the username claim, else the subject) or the token's name; "" when
	// anonymous.
	Name string
	// Method is how it was established: "token:<name>", "proxy", "oidc"
	// or "anonymous".
	Method string
	// Email and Groups are what the proxy or the ID token said (proxy
	// and oidc only).
	Email  string
	Groups []string
	// Roles are the roles granted, none for a person no server.auth.roles
	// entry matches.
	Roles []Role
	// approveIn limits the approver role to workspaces; nil with
	// approveAll is every workspace.
	approveIn  []config.WorkspaceScope
	approveAll bool
	// session names an oidc sign-in's session (its id's hash, encoded):
	// its CSRF token is the session's, and dies with it.
	session string
}

// Ambient reports an identity a browser presents on its own (the proxy's
// cookie, a session cookie): its mutating requests must prove they come
// from driftwatch's own pages (CheckCSRF). An API token never is.
func (id Identity) Ambient() bool { return id.Method == MethodProxy || id.Method == MethodOIDC }

// Anonymous reports a caller without a credential.
func (id Identity) Anonymous() bool { return id.Method == "" || id.Method == MethodAnonymous }

// Has reports whether one of the identity's roles allows what need allows.
func (id Identity) Has(need Role) bool {
	return slices.ContainsFunc(id.Roles, func(r Role) bool { return r.Grants(need) })
}

// Actor is how records name who acted: the person, "token:<name>", or
// "anonymous".
func (id Identity) Actor() string {
	switch {
	case id.Anonymous():
		return MethodAnonymous
	case id.Method == MethodProxy || id.Method == MethodOIDC:
		return id.Name
	}
	return id.Method
}

// MayApprove reports whether the identity may approve or reject a
// remediation of the workspace: an admin anywhere, an approver within its
// scope.
func (id Identity) MayApprove(info control.WorkspaceInfo) bool {
	if id.Has(RoleAdmin) {
		return true
	}
	if !id.Has(RoleApprover) {
		return false
	}
	if id.approveAll {
		return true
	}
	return slices.ContainsFunc(id.approveIn, func(sc config.WorkspaceScope) bool { return sc.Contains(info.Labels, info.Owner) })
}

// grant adds role r, limited to scope when r is approver and scope is
// not zero.
func (id *Identity) grant(r Role, scope config.WorkspaceScope) {
	if !slices.Contains(id.Roles, r) {
		id.Roles = append(id.Roles, r)
	}
	if r == RoleApprover {
		if scope.IsZero() {
			id.approveAll = true
		} else {
			id.approveIn = append(id.approveIn, scope)
		}
	}
}

type identityKey struct{}

// WithIdentity returns ctx carrying id: the guard's, for the handlers.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity the server authenticated for the
// request whose context ctx is; ok false (and an anonymous identity) on a
// route that authenticates itself (server.Options.Handlers) or outside a
// request.
// The daemon reads it where it records who acted (a remediation's
// decision, a silence).
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	if !ok {
		return Identity{Method: MethodAnonymous}, false
	}
	return id, true
}

// CallerActor is the Actor of the identity the server authenticated for
// the request whose context ctx is, or "" when it is anonymous or there
// is none: who the daemon records as having decided through the API (a
// remediation's approval, say; remediation.Options.Caller).
func CallerActor(ctx context.Context) string {
	if id, ok := IdentityFrom(ctx); ok && !id.Anonymous() {
		return id.Actor()
	}
	return ""
}

// Reader reports whether the request's identity holds a read role (a
// credential), not only anonymous access: a log holding attribute values
// is served to a reader alone.
func Reader(r *http.Request) bool {
	id, _ := IdentityFrom(r.Context())
	return id.Has(RoleViewer)
}

// SafeMethod reports a method that reads (it changes nothing).
func SafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
