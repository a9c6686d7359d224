package server

import (
	"net/http"
	"strings"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
)

// accessKind is how a route is guarded.
type accessKind int

const (
	// accessRole: the middleware authenticates and requires a role.
	accessRole accessKind = iota + 1
	// accessPublic: anyone (probes, metrics).
	accessPublic
	// accessSelf: the handler authenticates the request itself (HMAC, a
	// bearer of its own): the Kubernetes result callback, Slack
	// interactivity (Options.Handlers).
	accessSelf
)

// access is a route's rule.
type access struct {
	kind accessKind
	// need is the least role (accessRole).
	need auth.Role
	// logs: the route shows run logs, which token mode's default keeps
	// from anonymous callers.
	logs bool
	// metrics: the route is /metrics, which the scrape token
	// (server.metrics_token_file) may read too.
	metrics bool
	// audit is what a mutating route records in the audit log (audit.go);
	// nil for reads.
	audit *auditAction
}

func (a access) String() string {
	switch a.kind {
	case accessPublic:
		return "public"
	case accessSelf:
		return "self-authenticated"
	case accessRole:
		switch {
		case a.logs:
			return string(a.need) + " (logs)"
		case a.metrics:
			return string(a.need) + " or the metrics token"
		}
		return string(a.need)
	}
	return "no rule"
}

// route is one registered route and its rule.
type route struct {
	pattern string
	access  access
}

// router is the route table: every route is registered with its rule, so
// that none can be mounted without one (the mux is not reachable
// otherwise), and the table can be listed (a test checks every route for
// every role).
type router struct {
	s      *Server
	mux    *http.ServeMux
	routes []route
}

func newRouter(s *Server) *router { return &router{s: s, mux: http.NewServeMux()} }

// handle mounts h at pattern ("METHOD /path", as http.ServeMux takes it)
// for callers holding a role that allows need.
func (rt *router) handle(pattern string, need auth.Role, h http.HandlerFunc) {
	rt.add(pattern, access{kind: accessRole, need: need}, h)
}

// handleLogs mounts a viewer route that shows run logs: without a
// credential only when anonymous reads are opened explicitly
// (server.auth.anonymous_role: viewer, server.open_reads).
func (rt *router) handleLogs(pattern string, h http.HandlerFunc) {
	rt.add(pattern, access{kind: accessRole, need: auth.RoleViewer, logs: true}, h)
}

// handleMetrics mounts /metrics: for viewers, and for the scrape token
// (server.metrics_token_file), which may read nothing else. It is open
// where a caller without a credential may read (auth.Authenticator.Admit).
func (rt *router) handleMetrics(pattern string, h http.Handler) {
	rt.add(pattern, access{kind: accessRole, need: auth.RoleViewer, metrics: true}, h)
}

// public mounts h for anyone, without authentication.
func (rt *router) public(pattern string, h http.Handler) {
	rt.add(pattern, access{kind: accessPublic}, h)
}

// self mounts a handler that authenticates its requests itself.
func (rt *router) self(pattern string, h http.Handler) {
	rt.add(pattern, access{kind: accessSelf}, h)
}

func (rt *router) add(pattern string, a access, h http.Handler) {
	if a.kind == accessRole && !a.need.Valid() {
		// A programming error: the route answers 500 and the route
		// table test names it.
		rt.s.o.Logger.Error("route registered without a valid role", "pattern", pattern)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			respond.Error(w, http.StatusInternalServerError, "this route has no access rule")
		})
	}
	if a.kind == accessRole {
		if a.audit = auditedRoute(pattern); a.audit != nil {
			h = auditReached(h)
		}
	}
	rt.routes = append(rt.routes, route{pattern: pattern, access: a})
	if a.kind == accessRole {
		h = rt.s.guard(a, h)
	}
	rt.mux.Handle(pattern, h)
}

// isPage reports a route that answers HTML (the API answers JSON).
func isPage(path string) bool {
	return !strings.HasPrefix(path, "/api/")
}
