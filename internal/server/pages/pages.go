package pages

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
)

//go:embed assets
var assets embed.FS

// Pages renders the HTML pages; the server mounts each handler with its
// rule. Make one with New.
type Pages struct {
	src  *view.Source
	auth *auth.Authenticator

	status, workspace, message, run, remediation, group, adopt *template.Template
	// silences, trends and audit are nil if their template did not parse
	// (only a broken build gets there): the page answers 500, the rest
	// is served.
	silences, trends, audit *template.Template
	css                     template.CSS
	// csp allows exactly the inline stylesheet and nothing else: no
	// scripts, no external loads, no framing. Forms may be sent to this
	// origin only: the status page's search is a GET form (a query
	// string; nothing changes). Allowing 'self' lets no form change
	// anything either: a mutating request needs a bearer token, or with
	// an ambient identity (proxy headers, a session) a CSRF token and a
	// same-origin request (auth.CheckCSRF), which no form can make up.
	csp string
}

// New parses the page templates; its error is a broken build's.
func New(src *view.Source, a *auth.Authenticator) (*Pages, error) {
	p := &Pages{src: src, auth: a}
	if err := p.parse(); err != nil {
		return nil, err
	}
	var err error
	if p.silences, err = p.extraPage("silences.html", template.FuncMap{
		"silenceState":  silenceState,
		"labelPairs":    view.LabelPairs,
		"shortDuration": shortDuration,
	}); err != nil {
		// The template is embedded: only a broken build gets here, and
		// the page test catches it. The API does not depend on it.
		src.Logger.Error("parse the silences page", "err", err)
	}
	if p.trends, err = p.extraPage("trends.html", template.FuncMap{"num": num, "pct": func(v float64) string { return num(v*100) + "%" }}); err != nil {
		src.Logger.Error("parse the trends page", "err", err)
	}
	if p.audit, err = p.extraPage("audit.html", nil); err != nil {
		src.Logger.Error("parse the audit page", "err", err)
	}
	return p, nil
}

// extraPage is a page beyond those parse parses (silences, trends,
// audit): the layout (a clone of the status page's, made before any page
// is executed) with file's content and funcs added.
func (p *Pages) extraPage(file string, funcs template.FuncMap) (*template.Template, error) {
	t, err := p.status.Clone()
	if err != nil {
		return nil, fmt.Errorf("clone layout: %w", err)
	}
	t.Funcs(funcs)
	if _, err := t.ParseFS(assets, "assets/"+file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	return t, nil
}

func (p *Pages) parse() error {
	prefix := p.src.Prefix
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return fmt.Errorf("read stylesheet: %w", err)
	}
	sum := sha256.Sum256(css)
	funcs := template.FuncMap{
		"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"abs":         absTime,
		"rel":         relTime,
		"overdue":     overdue,
		"join":        strings.Join,
		"runDuration": fmtRunDuration,
		"wsPath":      func(name string) string { return view.WorkspacePath(prefix, name) },
		"runPath":     func(id string) string { return view.RunPath(prefix, id) },
		"remPath":     func(id string) string { return view.RemediationPath(prefix, id) },
		"groupPath":   func(id string) string { return view.GroupPath(prefix, id) },
		"stateLabel":  stateLabel,
		"resources":   resources,
		"rem":         func(now time.Time, r remediationView, apiBase string) remArg { return remArg{now, r, apiBase} },
		"count":       func(kind string, n int) countArg { return countArg{kind, n} },
		"when":        func(now, t time.Time, zero string) whenArg { return whenArg{now, t, zero} },
		"provOf":      func(now time.Time, f drift.Finding) provenanceArg { return provenanceArg{now, f} },
		"deref":       func(t *time.Time) time.Time { return *t },
		"thousands":   thousands,
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/remediation_parts.html")
	if err != nil {
		return fmt.Errorf("parse layout: %w", err)
	}
	p.css = template.CSS(css)
	p.csp = "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	for _, t := range []struct {
		dst  **template.Template
		file string
	}{
		{&p.status, "status.html"},
		{&p.workspace, "workspace.html"},
		{&p.message, "message.html"},
		{&p.run, "run.html"},
		{&p.remediation, "remediation.html"},
		{&p.group, "group.html"},
		{&p.adopt, "adopt.html"},
	} {
		l, err := layout.Clone()
		if err != nil {
			return fmt.Errorf("clone layout: %w", err)
		}
		if *t.dst, err = l.ParseFS(assets, "assets/"+t.file); err != nil {
			return fmt.Errorf("parse %s: %w", t.file, err)
		}
	}
	return nil
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

// provenanceArg is the "provenance" template's argument: a finding and
// the page's now.
type provenanceArg struct {
	Now time.Time
	F   drift.Finding
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

type messagePageData struct {
	page
	Heading, Message string
}

func (p *Pages) newPage(r *http.Request, title string, refresh bool) page {
	pg := page{Title: title, CSS: p.css, Prefix: p.src.Prefix, Now: p.src.Now(), Refresh: refresh}
	if id, ok := auth.IdentityFrom(r.Context()); ok && id.Ambient() {
		// A person signed in (proxy, session): the header names them, and
		// a session can be ended from any page.
		pg.User = id.Name
		if id.Method == auth.MethodOIDC {
			pg.SignOutCSRF = p.auth.CSRFToken(id)
		}
	}
	return pg
}

// Message answers with a page saying msg (a sentence without its capital
// and full stop) under heading: the sign-in routes' answers, refusals.
func (p *Pages) Message(w http.ResponseWriter, r *http.Request, code int, heading, msg string) {
	p.render(w, r, code, p.message, messagePageData{
		page:    p.newPage(r, "driftwatch: "+strings.ToLower(heading), false),
		Heading: heading,
		Message: strings.ToUpper(msg[:1]) + msg[1:] + ".",
	})
}

// Refuse answers a refused request for a page: in oidc mode a 401 to a
// read sends the browser to sign in (and back); otherwise a page saying
// why, whose 401 makes a browser ask for user name and password.
func (p *Pages) Refuse(w http.ResponseWriter, r *http.Request, ref auth.Refusal) {
	if o := p.auth.OIDC(); ref.Code == http.StatusUnauthorized && o != nil && auth.SafeMethod(r.Method) {
		// oidc mode: a browser signs in with the provider, then comes
		// back to this page.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, o.LoginURL(r), http.StatusSeeOther)
		return
	}
	if ref.Code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="driftwatch"`)
	}
	p.Message(w, r, ref.Code, ref.Heading, ref.Message)
}

// badRequestPage answers 400 with a page that says which parameter is
// wrong.
func (p *Pages) badRequestPage(w http.ResponseWriter, r *http.Request, err error) {
	p.render(w, r, http.StatusBadRequest, p.message, messagePageData{
		page:    p.newPage(r, "driftwatch: bad request", false),
		Heading: "Bad request",
		Message: err.Error() + ".",
	})
}

func (p *Pages) pageError(w http.ResponseWriter, r *http.Request, err error) {
	p.src.Logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	p.render(w, r, http.StatusInternalServerError, p.message, messagePageData{
		page:    p.newPage(r, "driftwatch: error", false),
		Heading: "Internal error",
		Message: "The page could not be built; the driftwatch log has the details.",
	})
}

// render executes t into a buffer first, so a template error becomes a
// clean 500 rather than half a page.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, code int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		p.src.Logger.Error("render page", "path", r.URL.Path, "err", err)
		respond.Text(w, http.StatusInternalServerError, "internal error: render page\n")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}
