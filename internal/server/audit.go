package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The audit log: every request to a mutating route (a route with a role
// and a method other than GET, HEAD or OPTIONS) is recorded through
// Options.Audit, allowed or not, by the guard: who (the identity the
// guard established, "anonymous" without one), with which roles, the
// action (auditActionFor), its target (a path value), when, and how it
// went (the status answered). Refusals are recorded too: they are what a
// security review looks for. No body, credential or header value is
// recorded. Reading it is GET /api/v1/audit (server/api) and the /audit
// page (server/pages), from Options.Store when it implements
// store.AuditReader.
//
// A request that named nobody and did nothing (no credential, an invalid
// one, identity headers from an untrusted peer) is recorded as anonymous
// (store.AuditEntry.Anonymous), with its peer (AuditPeer) and without the
// target or roles the caller chose: anyone can make those, so they are
// rate limited (AuditLimiter), aggregated by the store, and capped apart
// from the entries of identified callers, which they never evict.

// AuditRecorder records audit entries (Options.Audit): the daemon
// passes its store (store.AuditStore). A failure is logged and never
// fails the request.
type AuditRecorder interface {
	RecordAudit(ctx context.Context, e store.AuditEntry) error
}

// auditAction is what a mutating route records: its action's stable
// name and the path value that names its target ("" for none).
type auditAction struct {
	name   string
	target string
}

// auditActionFor is the table of the mutating routes' actions, by route
// pattern; ok false for a pattern it does not know, which the route
// table test refuses (a new mutating route needs its name here). The
// names are an interface: the API's filter and people's queries use
// them, so never rename one.
func auditActionFor(pattern string) (a auditAction, ok bool) {
	switch pattern {
	case "POST /api/v1/workspaces/{name}/runs":
		return auditAction{"run.trigger", "name"}, true
	case "POST /api/v1/runs/{id}/cancel":
		return auditAction{"run.cancel", "id"}, true
	case "POST /api/v1/workspaces/{name}/accept":
		return auditAction{"drift.accept", "name"}, true
	case "POST /api/v1/workspaces/{name}/adopt":
		return auditAction{"unmanaged.adopt", "name"}, true
	case "POST /api/v1/silences":
		// The new silence's ID, when made (respond.SetAuditTarget).
		return auditAction{"silence.add", ""}, true
	case "DELETE /api/v1/silences/{id}":
		return auditAction{"silence.expire", "id"}, true
	case "POST /api/v1/remediations/{id}/approve":
		return auditAction{"remediation.approve", "id"}, true
	case "POST /api/v1/remediations/{id}/reject":
		return auditAction{"remediation.reject", "id"}, true
	case "POST /api/v1/remediation/pause":
		return auditAction{"remediation.pause", ""}, true
	case "POST /api/v1/remediation/resume":
		return auditAction{"remediation.resume", ""}, true
	case "DELETE /api/v1/users/{subject}/sessions":
		return auditAction{"session.revoke", "subject"}, true
	}
	// Still recorded, under the pattern itself, rather than not at all.
	return auditAction{name: pattern}, false
}

// auditedRoute returns the action a route records, nil for a route that
// records none (reads).
func auditedRoute(pattern string) *auditAction {
	method, _, ok := strings.Cut(pattern, " ")
	if ok && auth.SafeMethod(method) {
		return nil
	}
	a, _ := auditActionFor(pattern)
	return &a
}

// auditWriter is the guard's ResponseWriter on an audited route: the
// access log's statusRecorder (the status answered), plus whether the
// route's handler was reached (past authentication, authorization, the
// body limit and the CSRF check), and a target the handler names
// (SetAuditTarget).
type auditWriter struct {
	statusRecorder
	reached bool
	target  string
}

// findAuditWriter returns the auditWriter w is or wraps, nil if none.
func findAuditWriter(w http.ResponseWriter) *auditWriter {
	for w != nil {
		if aw, ok := w.(*auditWriter); ok {
			return aw
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// SetAuditTarget names the target of the request being answered, for a
// route whose target is not in its path (the silence a POST made); the
// handler calls it through respond.SetAuditTarget.
func (aw *auditWriter) SetAuditTarget(target string) { aw.target = target }

// auditReached wraps an audited route's handler, inside the guard: the
// request got past every check.
func auditReached(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if aw := findAuditWriter(w); aw != nil {
			aw.reached = true
		}
		h.ServeHTTP(w, r)
	})
}

// auditTimeout bounds recording an entry, which happens once the handler
// returns and before net/http completes the answer: a slow store delays
// the answer at most this long.
const auditTimeout = 5 * time.Second

// auditDone is deferred by the guard on an audited request: it records
// it once answered, id and out being what the guard's authentication
// said. A handler that panicked is recorded as failed (500), and the
// panic goes on.
func (s *Server) auditDone(r *http.Request, a access, id *auth.Identity, out *auth.Outcome, aw *auditWriter, at time.Time) {
	if p := recover(); p != nil {
		if aw.status == 0 || aw.status < 400 {
			aw.status = http.StatusInternalServerError
		}
		s.recordAudit(r, a, *id, *out, aw, at)
		panic(p)
	}
	s.recordAudit(r, a, *id, *out, aw, at)
}

// recordAudit records one audited request, once answered.
func (s *Server) recordAudit(r *http.Request, a access, id auth.Identity, out auth.Outcome, aw *auditWriter, at time.Time) {
	if s.o.Audit == nil || a.audit == nil {
		return
	}
	status := aw.status
	if status == 0 {
		status = http.StatusOK // net/http's answer to a handler that writes nothing
	}
	e := store.AuditEntry{
		At:     at,
		Actor:  id.Actor(),
		Method: id.Method,
		Action: a.audit.name,
		Target: aw.target,
		Status: status,
		Source: auditSource(r, id),
	}
	if e.Method == "" {
		e.Method = auth.MethodAnonymous
	}
	for _, role := range id.Roles {
		e.Roles = append(e.Roles, string(role))
	}
	if e.Target == "" && a.audit.target != "" {
		e.Target = r.PathValue(a.audit.target)
	}
	e.Result, e.Detail = auditResult(a, id, out, aw.reached, status)
	if out != auth.OutcomeOK && e.Result != store.AuditOK {
		e.Anonymous, e.Peer, e.Target, e.Roles = true, AuditPeer(r.RemoteAddr), "", nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	if err := s.o.Audit.RecordAudit(ctx, e); err != nil {
		s.o.Logger.Error("record audit entry", "action", e.Action, "target", e.Target, "actor", e.Actor,
			"result", e.Result, "err", err)
	}
}

// auditSource says whether a request came from driftwatch's own pages (a
// page route, a browser's ambient sign-in, or a request carrying a CSRF
// token, whose value is not looked at) or from an API client.
func auditSource(r *http.Request, id auth.Identity) string {
	if isPage(r.URL.Path) || id.Ambient() || r.Header.Get(auth.CSRFHeader) != "" {
		return store.AuditSourcePage
	}
	return store.AuditSourceAPI
}

// auditResult classifies an answered request: denied when the guard
// refused it (or the handler answered 401, 403 or 413), ok for a success
// of the handler, error otherwise; the detail says why in a few fixed
// words, never with a value from the request.
func auditResult(a access, id auth.Identity, out auth.Outcome, reached bool, status int) (result, detail string) {
	tooLarge := fmt.Sprintf("body larger than %d bytes", respond.MaxBody)
	if reached {
		switch {
		case status < 400:
			return store.AuditOK, ""
		case status == http.StatusRequestEntityTooLarge:
			return store.AuditDenied, tooLarge
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			return store.AuditDenied, "refused by the handler"
		}
		return store.AuditError, strings.ToLower(http.StatusText(status))
	}
	// The guard answered: a refusal, or a credential it could not check.
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return store.AuditDenied, tooLarge
	case out == auth.OutcomeUntrusted:
		return store.AuditDenied, "identity headers from an untrusted peer"
	case status == http.StatusUnauthorized && out == auth.OutcomeInvalid:
		return store.AuditDenied, "invalid credential"
	case status == http.StatusForbidden && out == auth.OutcomeOK && !id.Has(a.need):
		return store.AuditDenied, "needs the " + string(a.need) + " role"
	case status == http.StatusForbidden && out == auth.OutcomeOK:
		return store.AuditDenied, "cross-site request or missing CSRF token"
	case status == http.StatusForbidden:
		return store.AuditDenied, "no credential can have the " + string(a.need) + " role"
	case status >= 500:
		return store.AuditError, "credential check failed"
	}
	return store.AuditDenied, "no credential"
}
