package server

import (
	"fmt"
	"net/http"
	"strings"
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
	need Role
	// logs: the route shows run logs, which token mode's default keeps
	// from anonymous callers (anonymousMay).
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
func (rt *router) handle(pattern string, need Role, h http.HandlerFunc) {
	rt.add(pattern, access{kind: accessRole, need: need}, h)
}

// handleLogs mounts a viewer route that shows run logs: without a
// credential only when anonymous reads are opened explicitly
// (server.auth.anonymous_role: viewer, server.open_reads).
func (rt *router) handleLogs(pattern string, h http.HandlerFunc) {
	rt.add(pattern, access{kind: accessRole, need: RoleViewer, logs: true}, h)
}

// handleMetrics mounts /metrics: for viewers, and for the scrape token
// (server.metrics_token_file), which may read nothing else. It is open
// where a caller without a credential may read (anonymousMay).
func (rt *router) handleMetrics(pattern string, h http.Handler) {
	rt.add(pattern, access{kind: accessRole, need: RoleViewer, metrics: true}, h)
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
	if a.kind == accessRole && !a.need.valid() {
		// A programming error: the route answers 500 and the route
		// table test names it.
		rt.s.o.Logger.Error("route registered without a valid role", "pattern", pattern)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusInternalServerError, "this route has no access rule")
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

// guard wraps a route's handler: it authenticates the request, puts the
// Identity in its context and refuses with 401 (no or an invalid
// credential, with WWW-Authenticate), 403 (a role too low, a proxy
// header from an untrusted peer, a mutating request without its CSRF
// token); a mutating request's body is bounded (413), whether its
// handler reads it or not (readBody). A token whose file cannot be read
// is revoked (authenticate). A mutating request is recorded in the
// audit log once answered, refused or not (recordAudit).
func (s *Server) guard(a access, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var (
			id  Identity
			out authOutcome
		)
		if a.audit != nil && !safeMethod(r.Method) {
			aw, at := &auditWriter{statusRecorder: statusRecorder{ResponseWriter: w}}, s.o.Now()
			w = aw
			defer s.auditDone(r, a, &id, &out, aw, at)
		}
		page := isPage(r.URL.Path)
		if a.metrics && s.auth.metricsToken(r) {
			id, out = Identity{Name: "metrics", Method: methodTokenPrefix + "metrics"}, authOK
			next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
			return
		}
		id, out = s.auth.authenticate(r)
		switch {
		case out == authUntrusted:
			s.refuse(w, r, page, http.StatusForbidden, "Not signed in", msgUntrusted)
			return
		case out == authOK && id.Has(a.need):
		case s.auth.anonymousMay(a.need, a.logs):
			// A caller without a credential, or without a role for this,
			// who may read anyway; an invalid credential does not close
			// an open read.
			if out != authOK {
				id = Identity{Method: MethodAnonymous}
			}
		case out == authOK:
			s.refuseRole(w, r, page, id, a.need)
			return
		case !s.auth.canGrant(a.need) && (!a.metrics || s.auth.metrics.file == ""):
			s.refuseClosed(w, r, page, a)
			return
		default:
			s.refuseUnauthenticated(w, r, page, a, out == authInvalid)
			return
		}
		if !safeMethod(r.Method) {
			if !readBody(w, r, maxBody) {
				return
			}
			if id.ambient() && !s.checkCSRF(w, r, id, page) {
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
	})
}

// refuseRole answers an authenticated caller whose roles do not allow the
// route: 403, saying what it needs.
func (s *Server) refuseRole(w http.ResponseWriter, r *http.Request, page bool, id Identity, need Role) {
	var msg string
	if len(id.Roles) == 0 {
		msg = fmt.Sprintf("you are signed in as %s, but no role is granted to you on this driftwatch: "+
			"ask its operators to add you to server.auth.roles", id.Name)
	} else {
		msg = fmt.Sprintf("this needs the %s role; %s has %s", need, id.Actor(), joinRoles(id.Roles))
	}
	s.refuse(w, r, page, http.StatusForbidden, "Not allowed", msg)
}

func joinRoles(rs []Role) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return strings.Join(out, ", ")
}

// refuseClosed answers a route no configured credential could ever use:
// 403, saying what to configure.
func (s *Server) refuseClosed(w http.ResponseWriter, r *http.Request, page bool, a access) {
	switch {
	case a.logs:
		s.refuseRead(w, r, page, http.StatusForbidden, msgReadsClosed)
	case a.need == RoleViewer:
		s.refuse(w, r, page, http.StatusForbidden, "This driftwatch is closed", msgViewClosed)
	case len(s.auth.tokens) == 0 && len(s.auth.roles) == 0:
		writeError(w, http.StatusForbidden, msgMutationsClosed)
	default:
		writeError(w, http.StatusForbidden, fmt.Sprintf(
			"this needs the %s role, and no credential on this driftwatch has it (server.auth)", a.need))
	}
}

// refuseUnauthenticated answers a request without a usable credential:
// 401 with a challenge.
func (s *Server) refuseUnauthenticated(w http.ResponseWriter, r *http.Request, page bool, a access, invalid bool) {
	switch {
	case a.logs && invalid:
		s.refuseRead(w, r, page, http.StatusUnauthorized, msgReadInvalid)
	case a.logs:
		s.refuseRead(w, r, page, http.StatusUnauthorized, msgReadMissing)
	case a.need != RoleViewer:
		w.Header().Set("WWW-Authenticate", `Bearer realm="driftwatch"`)
		if _, ok := bearer(r.Header.Get("Authorization")); ok {
			writeError(w, http.StatusUnauthorized, msgBearerInvalid)
		} else {
			writeError(w, http.StatusUnauthorized, msgBearerMissing)
		}
	case invalid:
		s.refuse(w, r, page, http.StatusUnauthorized, "Sign in to read this page", msgViewInvalid)
	default:
		s.refuse(w, r, page, http.StatusUnauthorized, "Sign in to read this page", msgViewMissing)
	}
}
