package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/store"
)

//go:embed assets
var assets embed.FS

// pageRunsLimit is how many runs a workspace page lists.
const pageRunsLimit = 20

// pages holds the parsed page templates and the stylesheet.
type pages struct {
	status, workspace, message, run, remediation *template.Template
	css                                          template.CSS
	// csp allows exactly the inline stylesheet and nothing else: no
	// scripts, no external loads, no framing. Forms may be sent to this
	// origin only: the status page's search is a GET form (a query
	// string; nothing changes). Allowing 'self' lets no form change
	// anything either: a mutating request needs a bearer token, or with
	// an ambient identity (proxy headers, a session) a CSRF token and a
	// same-origin request (csrf.go), which no form can make up.
	csp string
}

// extraPage is a page beyond those newPages parses (silences, trends,
// audit): the layout (a clone of the status page's, made before any page
// is executed) with file's content and funcs added.
func (s *Server) extraPage(file string, funcs template.FuncMap) (*template.Template, error) {
	t, err := s.pages.status.Clone()
	if err != nil {
		return nil, fmt.Errorf("clone layout: %w", err)
	}
	t.Funcs(funcs)
	if _, err := t.ParseFS(assets, "assets/"+file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	return t, nil
}

func newPages(prefix string) (*pages, error) {
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return nil, fmt.Errorf("read stylesheet: %w", err)
	}
	sum := sha256.Sum256(css)
	funcs := template.FuncMap{
		"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"abs":         absTime,
		"rel":         relTime,
		"overdue":     overdue,
		"join":        strings.Join,
		"runDuration": fmtRunDuration,
		"wsPath":      func(name string) string { return workspacePath(prefix, name) },
		"runPath":     func(id string) string { return runPath(prefix, id) },
		"remPath":     func(id string) string { return remediationPath(prefix, id) },
		"stateLabel":  stateLabel,
		"resources":   resources,
		"rem":         func(now time.Time, r remediationView, apiBase string) remArg { return remArg{now, r, apiBase} },
		"count":       func(kind string, n int) countArg { return countArg{kind, n} },
		"when":        func(now, t time.Time, zero string) whenArg { return whenArg{now, t, zero} },
		"deref":       func(t *time.Time) time.Time { return *t },
		"thousands":   thousands,
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/remediation_parts.html")
	if err != nil {
		return nil, fmt.Errorf("parse layout: %w", err)
	}
	p := &pages{
		css: template.CSS(css),
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
			"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	}
	for _, t := range []struct {
		dst  **template.Template
		file string
	}{
		{&p.status, "status.html"},
		{&p.workspace, "workspace.html"},
		{&p.message, "message.html"},
		{&p.run, "run.html"},
		{&p.remediation, "remediation.html"},
	} {
		l, err := layout.Clone()
		if err != nil {
			return nil, fmt.Errorf("clone layout: %w", err)
		}
		if *t.dst, err = l.ParseFS(assets, "assets/"+t.file); err != nil {
			return nil, fmt.Errorf("parse %s: %w", t.file, err)
		}
	}
	return p, nil
}

type countArg struct {
	Kind string
	N    int
}

// remArg is what a remediation's parts of a page need.
type remArg struct {
	Now     time.Time
	R       remediationView
	APIBase string
}

type whenArg struct {
	Now, T time.Time
	Zero   string // shown when T is zero
}

// page is what every page's layout needs.
type page struct {
	Title   string
	CSS     template.CSS
	Prefix  string
	Now     time.Time
	Refresh bool
	// RefreshEvery overrides the 30 s refresh period (seconds; 0: 30).
	RefreshEvery int
	// User is the person signed in (proxy or oidc mode), "" otherwise;
	// SignOutCSRF, set for a session of oidc mode, is the CSRF token the
	// header's sign-out form posts.
	User        string
	SignOutCSRF string
}

type summaryItem struct {
	Status drift.Status
	N      int
}

type statusPageData struct {
	page
	Notifiers []notifierView
	// Verdict and Tone are about every configured workspace, whatever
	// the filters.
	Verdict string
	Tone    string // "bad", "warn" or "" (all clean)
	// Configured counts every configured workspace.
	Configured int
	// List is the filtered page of workspaces, with its filter bar and
	// pager; Workspaces are its rows.
	List       listView
	Workspaces []workspaceView
	// Remediation is nil when the daemon has no remediation control.
	Remediation *remediationSummary
	// Held are the workspaces whose notifications are held now (by a
	// silence or a maintenance window), soonest release first; HeldBy
	// is the same by name.
	Held   []heldWorkspace
	HeldBy map[string]*hold
	// HeldShown are the first of Held the headline names (maxHeldNames),
	// HeldMore how many it leaves out.
	HeldShown []heldWorkspace
	HeldMore  int
}

// maxHeldNames bounds the workspaces the status page's "notifications
// held" line names: a window over hundreds of workspaces is summed up,
// and the Silences page lists them all.
const maxHeldNames = 20

// notifierView is a notifier's row on the status page.
type notifierView struct {
	NotifierStatus
	Failing bool
}

type workspacePageData struct {
	page
	W         workspaceView
	Findings  []drift.Finding
	Runs      []store.Run
	RunsLimit int
	APIBase   string
	// HasRemediation: the daemon has remediation control; Remediations
	// are the workspace's newest.
	HasRemediation    bool
	Remediations      []remediationView
	RemediationsLimit int
	// Incidents are the workspace's open and confirming incidents.
	Incidents []store.Incident
	// Hold is what holds its notifications now or next (nil: nothing).
	Hold *hold
}

type messagePageData struct {
	page
	Heading, Message string
}

func (s *Server) newPage(r *http.Request, title string, refresh bool) page {
	p := page{Title: title, CSS: s.pages.css, Prefix: s.prefix, Now: s.o.Now(), Refresh: refresh}
	if id, ok := IdentityFrom(r.Context()); ok && id.ambient() {
		// A person signed in (proxy, session): the header names them, and
		// a session can be ended from any page.
		p.User = id.Name
		if id.Method == MethodOIDC {
			p.SignOutCSRF = s.csrfFor(id)
		}
	}
	return p
}

// statusSummary counts workspaces per status and words the headline.
func statusSummary(vs []workspaceView) (items []summaryItem, verdict, tone string) {
	n := map[drift.Status]int{}
	for _, v := range vs {
		n[v.Status]++
	}
	for _, s := range summaryStatuses {
		items = append(items, summaryItem{s, n[s]})
	}
	bad := n[drift.StatusErrored] + n[drift.StatusForbidden] + n[drift.StatusDrift] + n[drift.StatusValidation]
	switch {
	case len(vs) == 0:
		return items, "No workspaces", "warn"
	case bad > 0:
		return items, fmt.Sprintf("%d of %d need attention", bad, len(vs)), "bad"
	case n[drift.StatusPending] > 0:
		return items, fmt.Sprintf("No drift · %d with pending changes", n[drift.StatusPending]), "warn"
	case n[StatusUnknown] > 0:
		return items, fmt.Sprintf("No drift · %d not checked yet", n[StatusUnknown]), "warn"
	}
	return items, fmt.Sprintf("All %d clean", len(vs)), ""
}

func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	f, err := parseListQuery(r.URL.Query())
	if err != nil {
		s.badRequestPage(w, r, err)
		return
	}
	vs, err := s.workspaces(r.Context())
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	ns, err := s.notifiers(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	now := s.o.Now()
	var nvs []notifierView
	for _, n := range ns {
		nvs = append(nvs, notifierView{NotifierStatus: n, Failing: n.Failing(now)})
	}
	rem, err := s.remediationSummary(r.Context(), vs)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	held, err := s.heldNow(r, now)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	// The headline is about every workspace; the table about the filtered
	// page: only its rows are rendered, which keeps the page fast however
	// many workspaces are configured.
	_, verdict, tone := statusSummary(vs)
	res := listWorkspaces(vs, f)
	title := "driftwatch: " + verdict
	if f.filtered() || f.Page > 1 {
		title += fmt.Sprintf(" · page %d, %d shown", f.Page, len(res.Items))
	}
	d := statusPageData{
		page:    s.newPage(r, title, true),
		Verdict: verdict, Tone: tone, Configured: len(vs),
		List: newListView(s.prefix, vs, f, res), Workspaces: res.Items,
		Notifiers: nvs, Remediation: rem,
		Held: held, HeldBy: heldBy(held),
	}
	d.HeldShown = held[:min(len(held), maxHeldNames)]
	d.HeldMore = len(held) - len(d.HeldShown)
	s.render(w, r, http.StatusOK, s.pages.status, d)
}

// badRequestPage answers 400 with a page that says which parameter is
// wrong.
func (s *Server) badRequestPage(w http.ResponseWriter, r *http.Request, err error) {
	s.render(w, r, http.StatusBadRequest, s.pages.message, messagePageData{
		page:    s.newPage(r, "driftwatch: bad request", false),
		Heading: "Bad request",
		Message: err.Error() + ".",
	})
}

func (s *Server) workspacePage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, err := s.workspace(r.Context(), name)
	if errors.Is(err, errNotConfigured) {
		s.render(w, r, http.StatusNotFound, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: unknown workspace", false),
			Heading: "Unknown workspace",
			Message: fmt.Sprintf("No workspace called %q is configured.", name),
		})
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	runs, err := s.o.Store.Runs(r.Context(), name, pageRunsLimit)
	if err != nil {
		s.pageError(w, r, fmt.Errorf("workspace %q: runs: %w", name, err))
		return
	}
	rems, err := s.remediationViews(r.Context(), name, pageRemediationsLimit)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	incidents, err := s.liveIncidents(r.Context(), name)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	h, err := s.holdOf(r, s.o.Now(), v.WorkspaceInfo)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, s.pages.workspace, workspacePageData{
		page:              s.newPage(r, "driftwatch: "+name+" ("+string(v.Status)+")", true),
		W:                 v,
		Findings:          sortedFindings(v.State.Findings),
		Runs:              runs,
		RunsLimit:         pageRunsLimit,
		APIBase:           s.apiBase,
		HasRemediation:    s.rem != nil,
		Remediations:      rems,
		RemediationsLimit: pageRemediationsLimit,
		Incidents:         incidents,
		Hold:              h,
	})
}

func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	s.o.Logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	s.render(w, r, http.StatusInternalServerError, s.pages.message, messagePageData{
		page:    s.newPage(r, "driftwatch: error", false),
		Heading: "Internal error",
		Message: "The page could not be built; the driftwatch log has the details.",
	})
}

// render executes t into a buffer first, so a template error becomes a
// clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		s.o.Logger.Error("render page", "path", r.URL.Path, "err", err)
		writeText(w, http.StatusInternalServerError, "internal error: render page\n")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", s.pages.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// absTime formats t for a title attribute: "2026-01-02 15:04:05 UTC".
func absTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// relTime says how long ago (or in how long) t is from now, to the
// coarsest unit that keeps it readable: "45s ago", "12m ago", "3h ago",
// "5d ago", "in 20m". Beyond 60 days it gives the date.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		if future {
			return "now"
		}
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 10*time.Hour && d%time.Hour >= time.Minute:
		s = fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 60*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// overdueGrace is how late a next run may be before the page calls it
// overdue (a run waits for a free slot under the concurrency cap).
const overdueGrace = 5 * time.Minute

// overdue reports whether a run planned for next should long have started:
// the scheduler is stuck or the queue is saturated.
func overdue(now, next time.Time) bool {
	return !next.IsZero() && now.Sub(next) > overdueGrace
}

// fmtDuration formats a run's duration: "850ms", "42s", "3m 05s", "1h 02m".
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm %02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh %02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func fmtRunDuration(r store.Run) string {
	d, ok := runDuration(r)
	if !ok {
		return "—"
	}
	return fmtDuration(d)
}
