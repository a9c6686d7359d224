package server

import (
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/pages"
)

// routes builds the route table: every route with its rule (router), so
// that the rule is checked before the handler runs and a test can list
// them all. The JSON API's handlers are server/api's, the pages'
// server/pages', the sign-in routes server/auth's. The routes of
// Options.Handlers authenticate themselves.
func (s *Server) routes() (http.Handler, *router) {
	a, p := s.api, s.pages
	mux := newRouter(s)
	mux.public("GET /healthz", http.HandlerFunc(s.healthz))
	mux.public("GET /readyz", http.HandlerFunc(s.readyz))
	mux.handleMetrics("GET /metrics", promhttp.HandlerFor(s.o.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(s.o.Logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.handle("GET /api/v1/whoami", auth.RoleViewer, a.Whoami)
	mux.handle("GET /api/v1/workspaces", auth.RoleViewer, a.Workspaces)
	mux.handle("GET /api/v1/workspaces/{name}", auth.RoleViewer, a.Workspace)
	mux.handle("GET /api/v1/workspaces/{name}/runs", auth.RoleViewer, a.Runs)
	mux.handle("POST /api/v1/workspaces/{name}/runs", auth.RoleOperator, a.Trigger)
	mux.handle("GET /api/v1/runs/{id}", auth.RoleViewer, a.Run)
	mux.handle("GET /api/v1/notifiers", auth.RoleViewer, a.Notifiers)
	mux.handle("GET /api/v1/status", auth.RoleViewer, a.Status)
	mux.handleLogs("GET /api/v1/runs/{id}/logs", a.RunLogs)
	mux.handle("POST /api/v1/runs/{id}/cancel", auth.RoleOperator, a.Cancel)
	// Accepting drift as code: 501 when the daemon has no
	// AcceptControl. The workspace page's button posts a form (with its
	// CSRF token) to the same route, and is answered as a page.
	mux.handle("POST /api/v1/workspaces/{name}/accept", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		if pages.IsForm(r) {
			p.Accept(w, r)
			return
		}
		a.Accept(w, r)
	})
	// Adopting a scan's unmanaged resources, while the request waits: 501
	// when the daemon has no AdoptControl. The page's Adopt buttons post
	// forms, answered as a page with the result.
	mux.handle("POST /api/v1/workspaces/{name}/adopt", auth.RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		if pages.IsForm(r) {
			p.Adopt(w, r)
			return
		}
		a.Adopt(w, r)
	})
	mux.handle("GET /api/v1/workspaces/{name}/acceptances", auth.RoleViewer, a.Acceptances)
	mux.handle("GET /api/v1/acceptances/{id}", auth.RoleViewer, a.GetAcceptance)
	// Group incidents (drift of several workspaces with one cause): an
	// empty list when the daemon keeps none.
	mux.handle("GET /api/v1/groups", auth.RoleViewer, a.Groups)
	mux.handle("GET /api/v1/groups/{id}", auth.RoleViewer, a.Group)
	if s.src.Rem != nil {
		// Reads for viewers, approve and reject for approvers (within
		// their workspaces), the kill switch for admins.
		mux.handle("GET /api/v1/remediations", auth.RoleViewer, a.Remediations)
		mux.handle("GET /api/v1/remediations/{id}", auth.RoleViewer, a.Remediation)
		mux.handle("POST /api/v1/remediations/{id}/approve", auth.RoleApprover, a.Decide(true))
		mux.handle("POST /api/v1/remediations/{id}/reject", auth.RoleApprover, a.Decide(false))
		mux.handle("GET /api/v1/remediation", auth.RoleViewer, a.RemediationStatus)
		mux.handle("POST /api/v1/remediation/pause", auth.RoleAdmin, a.Pause(true))
		mux.handle("POST /api/v1/remediation/resume", auth.RoleAdmin, a.Pause(false))
		mux.handle("GET /remediations/{id}", auth.RoleViewer, p.Remediation)
	}
	// The silence routes answer 501 when the daemon has no
	// SilenceControl, so a client can tell "not here" from a typo in the
	// path.
	mux.handle("GET /api/v1/silences", auth.RoleViewer, a.Silences)
	mux.handle("POST /api/v1/silences", auth.RoleOperator, a.AddSilence)
	mux.handle("DELETE /api/v1/silences/{id}", auth.RoleOperator, a.ExpireSilence)
	mux.handle("GET /silences", auth.RoleViewer, p.Silences)
	mux.handle("GET /api/v1/stats", auth.RoleViewer, a.Stats)
	mux.handle("GET /trends", auth.RoleViewer, p.Trends)
	if s.auth.OIDC() != nil {
		// Public: the login and callback establish the session the guard
		// would ask for; logout checks its session's CSRF token itself.
		mux.public("GET /auth/login", http.HandlerFunc(s.auth.Login))
		mux.public("GET /auth/callback", http.HandlerFunc(s.auth.Callback))
		mux.public("POST /auth/logout", http.HandlerFunc(s.auth.Logout))
		mux.handle("GET /api/v1/sessions", auth.RoleAdmin, a.Sessions)
		mux.handle("DELETE /api/v1/users/{subject}/sessions", auth.RoleAdmin, a.RevokeSessions)
	}
	mux.handle("GET /api/v1/audit", auth.RoleViewer, a.Audit)
	mux.handle("GET /audit", auth.RoleViewer, p.Audit)
	for _, pattern := range slices.Sorted(maps.Keys(s.o.Handlers)) {
		mux.self(pattern, s.o.Handlers[pattern])
	}
	mux.handle("GET /{$}", auth.RoleViewer, p.Status)
	mux.handle("GET /workspaces/{name}", auth.RoleViewer, p.Workspace)
	mux.handle("GET /groups/{id}", auth.RoleViewer, p.Group)
	mux.handleLogs("GET /runs/{id}", p.Run)
	return s.accessLog(securityHeaders(s.checkHost(s.auth.StripProxySecret(mux.mux)))), mux
}
