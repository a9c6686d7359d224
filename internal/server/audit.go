package server

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
)

// The audit log: every request to a mutating route (a route with a role
// and a method other than GET, HEAD or OPTIONS) is recorded through
// Options.Audit, allowed or not, by the guard: who (the identity the
// guard established, "anonymous" without one), with which roles, the
// action (auditActionFor), its target (a path value), when, and how it
// went (the status answered). Refusals are recorded too: they are what a
// security review looks for. No body, credential or header value is
// recorded. Reading it is GET /api/v1/audit and the /audit page
// (viewers), from Options.Store when it implements store.AuditReader.
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
	case "POST /api/v1/silences":
		// The new silence's ID, when made (setAuditTarget).
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
	if ok && safeMethod(method) {
		return nil
	}
	a, _ := auditActionFor(pattern)
	return &a
}

// auditWriter is the guard's ResponseWriter on an audited route: the
// access log's statusRecorder (the status answered), plus whether the
// route's handler was reached (past authentication, authorization, the
// body limit and the CSRF check), and a target the handler names
// (setAuditTarget).
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

// setAuditTarget names the target of the request being answered, for a
// route whose target is not in its path (the silence a POST made). A
// no-op on a route that is not audited.
func setAuditTarget(w http.ResponseWriter, target string) {
	if aw := findAuditWriter(w); aw != nil {
		aw.target = target
	}
}

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
func (s *Server) auditDone(r *http.Request, a access, id *Identity, out *authOutcome, aw *auditWriter, at time.Time) {
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
func (s *Server) recordAudit(r *http.Request, a access, id Identity, out authOutcome, aw *auditWriter, at time.Time) {
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
		e.Method = MethodAnonymous
	}
	for _, role := range id.Roles {
		e.Roles = append(e.Roles, string(role))
	}
	if e.Target == "" && a.audit.target != "" {
		e.Target = r.PathValue(a.audit.target)
	}
	e.Result, e.Detail = auditResult(a, id, out, aw.reached, status)
	if out != authOK && e.Result != store.AuditOK {
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
func auditSource(r *http.Request, id Identity) string {
	if isPage(r.URL.Path) || id.ambient() || r.Header.Get(csrfHeader) != "" {
		return store.AuditSourcePage
	}
	return store.AuditSourceAPI
}

// auditResult classifies an answered request: denied when the guard
// refused it (or the handler answered 401, 403 or 413), ok for a success
// of the handler, error otherwise; the detail says why in a few fixed
// words, never with a value from the request.
func auditResult(a access, id Identity, out authOutcome, reached bool, status int) (result, detail string) {
	tooLarge := fmt.Sprintf("body larger than %d bytes", maxBody)
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
	case out == authUntrusted:
		return store.AuditDenied, "identity headers from an untrusted peer"
	case status == http.StatusUnauthorized && out == authInvalid:
		return store.AuditDenied, "invalid credential"
	case status == http.StatusForbidden && out == authOK && !id.Has(a.need):
		return store.AuditDenied, "needs the " + string(a.need) + " role"
	case status == http.StatusForbidden && out == authOK:
		return store.AuditDenied, "cross-site request or missing CSRF token"
	case status == http.StatusForbidden:
		return store.AuditDenied, "no credential can have the " + string(a.need) + " role"
	case status >= 500:
		return store.AuditError, "credential check failed"
	}
	return store.AuditDenied, "no credential"
}

// Audit queries.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// errAuditUnsupported: the store keeps no audit log the server can read.
var errAuditUnsupported = errors.New("the audit log is not available: this driftwatch's store does not keep one")

// auditRoutes registers GET /api/v1/audit and the Audit page, GET
// /audit, for viewers.
func (s *Server) auditRoutes(mux *router) {
	mux.handle("GET /api/v1/audit", RoleViewer, s.apiAudit)
	t, err := s.auditTemplate()
	if err != nil {
		// The template is embedded: only a broken build gets here, and
		// the page test catches it.
		s.o.Logger.Error("parse the audit page", "err", err)
	}
	mux.handle("GET /audit", RoleViewer, func(w http.ResponseWriter, r *http.Request) { s.auditPage(w, r, t) })
}

// auditQuery is an audit request's filter, as given.
type auditQuery struct {
	Since  string `json:"since,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
	Limit  int    `json:"limit"`

	filter store.AuditFilter
}

// parseAuditQuery reads since (Nd or Nh; none: every entry kept), actor,
// action, target (exact) and limit (1 to 1000, default 100). Any other
// parameter, or one given twice or empty, is an error naming it.
func parseAuditQuery(q url.Values, now time.Time) (auditQuery, error) {
	aq := auditQuery{Limit: defaultAuditLimit}
	for k, vs := range q {
		switch k {
		case "since", "actor", "action", "target", "limit":
		default:
			return aq, fmt.Errorf("unknown query parameter %q: want since, actor, action, target or limit", k)
		}
		if len(vs) > 1 {
			return aq, fmt.Errorf("query parameter %s: given %d times, at most once", k, len(vs))
		}
		if vs[0] == "" {
			return aq, fmt.Errorf("query parameter %s: empty; leave it out to select every entry", k)
		}
	}
	aq.Since, aq.Actor, aq.Action, aq.Target = q.Get("since"), q.Get("actor"), q.Get("action"), q.Get("target")
	if aq.Since != "" {
		since, err := stats.ParseSince(aq.Since, now)
		if err != nil {
			return aq, fmt.Errorf("query parameter since: %w", err)
		}
		aq.filter.Since = since
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditLimit {
			return aq, fmt.Errorf("query parameter limit: %q is not a whole number from 1 to %d", v, maxAuditLimit)
		}
		aq.Limit = n
	}
	aq.filter.Actor, aq.filter.Action, aq.filter.Target, aq.filter.Limit = aq.Actor, aq.Action, aq.Target, aq.Limit
	return aq, nil
}

// auditEntries reads the entries q selects.
func (s *Server) auditEntries(ctx context.Context, q auditQuery) ([]store.AuditEntry, error) {
	rd, ok := s.o.Store.(store.AuditReader)
	if !ok {
		return nil, errAuditUnsupported
	}
	es, err := rd.AuditEntries(ctx, q.filter)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return es, nil
}

// apiAuditEntry is an audit entry as the API shows it.
type apiAuditEntry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Method string    `json:"method"`
	Roles  []string  `json:"roles"`
	Action string    `json:"action"`
	Target string    `json:"target"`
	Result string    `json:"result"`
	Status int       `json:"status,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Source string    `json:"source"`
	// Count is how many requests the entry stands for: more than 1 for
	// an aggregated anonymous entry (a minute of one peer's refusals).
	Count     int    `json:"count"`
	Anonymous bool   `json:"anonymous,omitempty"`
	Peer      string `json:"peer,omitempty"`
}

// apiAudit serves GET /api/v1/audit: the entries the query selects,
// newest first, with the query as understood; 400 naming a bad parameter,
// 501 when the store keeps no audit log.
func (s *Server) apiAudit(w http.ResponseWriter, r *http.Request) {
	q, err := parseAuditQuery(r.URL.Query(), s.o.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	es, err := s.auditEntries(r.Context(), q)
	switch {
	case errors.Is(err, errAuditUnsupported):
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	out := make([]apiAuditEntry, 0, len(es))
	for _, e := range es {
		roles := e.Roles
		if roles == nil {
			roles = []string{}
		}
		out = append(out, apiAuditEntry{e.ID, e.At.UTC(), e.Actor, e.Method, roles, e.Action, e.Target,
			e.Result, e.Status, e.Detail, e.Source, max(e.Count, 1), e.Anonymous, e.Peer})
	}
	writeJSON(w, http.StatusOK, struct {
		Query   auditQuery      `json:"query"`
		Entries []apiAuditEntry `json:"entries"`
	}{q, out})
}

// auditTemplate is the Audit page.
func (s *Server) auditTemplate() (*template.Template, error) {
	return s.extraPage("audit.html", nil)
}

type auditPageData struct {
	page
	Query   auditQuery
	Entries []auditRow
	// Periods are the since choices; Active the filters set, each with
	// the link that drops it; Clear drops every filter.
	Periods []filterLink
	Active  []filterLink
	Clear   string
	APIPath string
	// More: the limit was reached, older entries are not shown.
	More bool
}

// auditRow is one entry of the page, with the links that filter by its
// actor, action and target.
type auditRow struct {
	store.AuditEntry
	ActorHref, ActionHref, TargetHref string
	// Badge is the result's badge class.
	Badge string
}

// auditPage serves GET /audit: the audit log's newest entries (the
// query of GET /api/v1/audit), each actor, action and target a link
// that filters by it.
func (s *Server) auditPage(w http.ResponseWriter, r *http.Request, t *template.Template) {
	if t == nil {
		s.pageError(w, r, errors.New("the audit page template did not parse"))
		return
	}
	q, err := parseAuditQuery(r.URL.Query(), s.o.Now())
	if err != nil {
		s.render(w, r, http.StatusBadRequest, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: bad request", false),
			Heading: "Bad request",
			Message: err.Error() + ".",
		})
		return
	}
	es, err := s.auditEntries(r.Context(), q)
	if errors.Is(err, errAuditUnsupported) {
		s.render(w, r, http.StatusNotImplemented, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: audit log unavailable", false),
			Heading: "Audit log unavailable",
			Message: err.Error() + ".",
		})
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	d := auditPageData{
		page:    s.newPage(r, "driftwatch: audit log", false),
		Query:   q,
		APIPath: s.prefix + "/api/v1/audit?" + auditValues(q).Encode(),
		More:    len(es) == q.Limit,
		Clear:   s.auditHref(auditQuery{Limit: q.Limit}),
	}
	d.APIPath = strings.TrimSuffix(d.APIPath, "?")
	for _, e := range es {
		row := auditRow{AuditEntry: e, Badge: auditBadge(e.Result)}
		with := func(set func(*auditQuery)) string {
			x := q
			set(&x)
			return s.auditHref(x)
		}
		row.ActorHref = with(func(x *auditQuery) { x.Actor = e.Actor })
		row.ActionHref = with(func(x *auditQuery) { x.Action = e.Action })
		if e.Target != "" {
			row.TargetHref = with(func(x *auditQuery) { x.Target = e.Target })
		}
		d.Entries = append(d.Entries, row)
	}
	for _, p := range []struct{ text, since string }{{"24 hours", "24h"}, {"7 days", "7d"}, {"30 days", "30d"}, {"all kept", ""}} {
		x := q
		x.Since = p.since
		d.Periods = append(d.Periods, filterLink{Text: p.text, Href: s.auditHref(x), Active: q.Since == p.since})
	}
	for _, f := range []struct {
		name string
		v    string
		drop func(*auditQuery)
	}{
		{"actor", q.Actor, func(x *auditQuery) { x.Actor = "" }},
		{"action", q.Action, func(x *auditQuery) { x.Action = "" }},
		{"target", q.Target, func(x *auditQuery) { x.Target = "" }},
	} {
		if f.v == "" {
			continue
		}
		x := q
		f.drop(&x)
		d.Active = append(d.Active, filterLink{Text: f.name + " " + f.v, Href: s.auditHref(x)})
	}
	s.render(w, r, http.StatusOK, t, d)
}

// auditValues is the query string of an audit URL; the default limit is
// left out.
func auditValues(q auditQuery) url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"since", q.Since}, {"actor", q.Actor}, {"action", q.Action}, {"target", q.Target}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if q.Limit != 0 && q.Limit != defaultAuditLimit {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

func (s *Server) auditHref(q auditQuery) string {
	if v := auditValues(q); len(v) > 0 {
		return s.prefix + "/audit?" + v.Encode()
	}
	return s.prefix + "/audit"
}

// auditBadge is the badge class of a result: the status colours.
func auditBadge(result string) string {
	switch result {
	case store.AuditOK:
		return "clean"
	case store.AuditDenied:
		return "forbidden"
	}
	return "errored"
}
