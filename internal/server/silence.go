package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// maxSilenceBody bounds the body of POST /api/v1/silences; a larger one
// is refused with 413.
const maxSilenceBody = 64 << 10

// msgNoSilences is the answer of the silence endpoints when the daemon
// has no silences (its Control does not implement SilenceControl).
const msgNoSilences = "silences are not available on this driftwatch"

// apiSilence is a silence as the API shows it.
type apiSilence struct {
	ID        string            `json:"id"`
	Workspace string            `json:"workspace"`
	Labels    map[string]string `json:"labels"`
	StartsAt  jsonTime          `json:"starts_at"`
	EndsAt    jsonTime          `json:"ends_at"`
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by"`
	CreatedAt jsonTime          `json:"created_at"`
	// Active: it holds messages now.
	Active bool `json:"active"`
}

func toAPISilence(x store.Silence, now time.Time) apiSilence {
	labels := map[string]string{}
	maps.Copy(labels, x.Labels)
	return apiSilence{
		ID: x.ID, Workspace: x.Workspace, Labels: labels,
		StartsAt: jsonTime(x.StartsAt), EndsAt: jsonTime(x.EndsAt),
		Comment: x.Comment, CreatedBy: x.CreatedBy, CreatedAt: jsonTime(x.CreatedAt),
		Active: x.Active(now),
	}
}

// apiWindow is a maintenance window as the API shows it. Ends is null
// when it is off, NextStart null when it never starts again.
type apiWindow struct {
	Name       string            `json:"name"`
	Workspaces []string          `json:"workspaces"`
	Labels     map[string]string `json:"labels"`
	Schedule   string            `json:"schedule"`
	TimeZone   string            `json:"time_zone"`
	Duration   string            `json:"duration"` // a Go duration, "2h0m0s"
	Active     bool              `json:"active"`
	Ends       jsonTime          `json:"ends"`
	NextStart  jsonTime          `json:"next_start"`
}

func toAPIWindow(m MaintenanceWindow) apiWindow {
	labels := map[string]string{}
	maps.Copy(labels, m.Labels)
	ends := m.Ends
	if !m.Active {
		ends = time.Time{}
	}
	return apiWindow{
		Name: m.Name, Workspaces: nonNil(m.Workspaces), Labels: labels,
		Schedule: m.Schedule, TimeZone: m.TimeZone, Duration: m.Duration.String(),
		Active: m.Active, Ends: jsonTime(ends), NextStart: jsonTime(m.NextStart),
	}
}

// silenceRoutes mounts the silence API and page. They answer 501 when the
// daemon has no SilenceControl, so a client can tell "not here" from a
// typo in the path.
func (s *Server) silenceRoutes(mux *router) {
	mux.handle("GET /api/v1/silences", RoleViewer, s.apiSilences)
	mux.handle("POST /api/v1/silences", RoleOperator, s.apiAddSilence)
	mux.handle("DELETE /api/v1/silences/{id}", RoleOperator, s.apiExpireSilence)
	t, err := s.silencesTemplate()
	if err != nil {
		// The template is embedded: only a broken build gets here, and
		// the page test catches it. The API does not depend on it.
		s.o.Logger.Error("parse the silences page", "err", err)
	}
	mux.handle("GET /silences", RoleViewer, func(w http.ResponseWriter, r *http.Request) { s.silencesPage(w, r, t) })
}

// silencesTemplate is the silences page.
func (s *Server) silencesTemplate() (*template.Template, error) {
	return s.extraPage("silences.html", template.FuncMap{
		"silenceState":  silenceState,
		"labelPairs":    labelPairs,
		"shortDuration": shortDuration,
	})
}

// silences returns the current silences and windows, never nil slices.
func (s *Server) silences(r *http.Request, now time.Time) ([]store.Silence, []MaintenanceWindow, error) {
	sils, err := s.sil.Silences(r.Context())
	if err != nil {
		return nil, nil, fmt.Errorf("silences: %w", err)
	}
	wins := s.sil.MaintenanceWindows(now)
	if sils == nil {
		sils = []store.Silence{}
	}
	if wins == nil {
		wins = []MaintenanceWindow{}
	}
	return sils, wins, nil
}

// apiSilences serves GET /api/v1/silences: the silences that have not
// ended (active or future, soonest end first) and the maintenance
// windows as of now.
func (s *Server) apiSilences(w http.ResponseWriter, r *http.Request) {
	if s.sil == nil {
		writeError(w, http.StatusNotImplemented, msgNoSilences)
		return
	}
	now := s.o.Now()
	sils, wins, err := s.silences(r, now)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	out := struct {
		Silences []apiSilence `json:"silences"`
		Windows  []apiWindow  `json:"maintenance_windows"`
	}{make([]apiSilence, 0, len(sils)), make([]apiWindow, 0, len(wins))}
	for _, x := range sils {
		out.Silences = append(out.Silences, toAPISilence(x, now))
	}
	for _, m := range wins {
		out.Windows = append(out.Windows, toAPIWindow(m))
	}
	writeJSON(w, http.StatusOK, out)
}

// silenceBody is the body of POST /api/v1/silences.
type silenceBody struct {
	Workspace string            `json:"workspace"`
	Labels    map[string]string `json:"labels"`
	For       string            `json:"for"`       // a Go duration, "4h"
	StartsAt  string            `json:"starts_at"` // RFC 3339; "": now
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by"`
}

// parseSilenceBody decodes and checks the shape of a silence request. Its
// errors name the field; what the daemon refuses beyond the shape (a
// duration too long, say) is its *SilenceError.
func parseSilenceBody(b []byte) (SilenceRequest, error) {
	var body silenceBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return SilenceRequest{}, fmt.Errorf("body must be a JSON silence: %w", jsonProblem(err))
	}
	if dec.More() {
		return SilenceRequest{}, errors.New("body must be one JSON object")
	}
	var errs []error
	body.Workspace = strings.TrimSpace(body.Workspace)
	switch {
	case body.Workspace == "" && len(body.Labels) == 0:
		errs = append(errs, errors.New("workspace or labels is required"))
	case body.Workspace != "" && len(body.Labels) > 0:
		errs = append(errs, errors.New("workspace and labels are exclusive: a silence matches one workspace, or every workspace with all the labels"))
	}
	for k := range body.Labels {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, errors.New("labels: a label key must not be empty"))
			break
		}
	}
	var d time.Duration
	if body.For == "" {
		errs = append(errs, errors.New(`for is required: how long the silence lasts, e.g. "4h"`))
	} else if v, err := time.ParseDuration(body.For); err != nil || v <= 0 {
		errs = append(errs, fmt.Errorf(`for %q must be a positive duration, e.g. "4h" or "90m"`, body.For))
	} else {
		d = v
	}
	var start time.Time
	if body.StartsAt != "" {
		v, err := time.Parse(time.RFC3339, body.StartsAt)
		if err != nil {
			errs = append(errs, fmt.Errorf("starts_at %q must be an RFC 3339 time, e.g. \"2026-03-14T22:00:00Z\"", body.StartsAt))
		}
		start = v
	}
	if strings.TrimSpace(body.Comment) == "" {
		errs = append(errs, errors.New("comment is required: why notifications are held"))
	}
	if err := errors.Join(errs...); err != nil {
		return SilenceRequest{}, err
	}
	if len(body.Labels) == 0 {
		body.Labels = nil
	}
	return SilenceRequest{
		Workspace: body.Workspace, Labels: body.Labels, StartsAt: start, For: d,
		Comment: strings.TrimSpace(body.Comment), CreatedBy: strings.TrimSpace(body.CreatedBy),
	}, nil
}

// jsonProblem words a decoding error for the client: the unknown field or
// the field of the wrong type, not the decoder's Go type names.
func jsonProblem(err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s has the wrong type (want %s)", te.Field, jsonKind(te.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, io.EOF):
		return errors.New("empty body")
	}
	return errors.New("malformed JSON")
}

func jsonKind(k string) string {
	switch k {
	case "map", "struct":
		return "an object of strings"
	}
	return "a string"
}

// apiAddSilence serves POST /api/v1/silences (operator): 201 with the
// silence as stored, created by the caller (actor).
func (s *Server) apiAddSilence(w http.ResponseWriter, r *http.Request) {
	if s.sil == nil {
		writeError(w, http.StatusNotImplemented, msgNoSilences)
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSilenceBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", maxSilenceBody))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "read body")
		return
	}
	req, err := parseSilenceBody(b)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req.CreatedBy = actor(r, req.CreatedBy)
	x, err := s.sil.AddSilence(r.Context(), req)
	var refused *SilenceError
	switch {
	case err == nil:
	case errors.As(err, &refused):
		writeError(w, http.StatusBadRequest, refused.Reason)
		return
	case errors.Is(err, ErrUnknownWorkspace):
		writeError(w, http.StatusNotFound, "unknown workspace")
		return
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	default:
		s.internalError(w, r, err)
		return
	}
	s.o.Logger.Info("silence added through the api", "silence", x.ID, "workspace", x.Workspace,
		"labels", labelPairs(x.Labels), "ends_at", x.EndsAt, "created_by", x.CreatedBy)
	setAuditTarget(w, x.ID)
	writeJSON(w, http.StatusCreated, toAPISilence(x, s.o.Now()))
}

// apiExpireSilence serves DELETE /api/v1/silences/{id}?by=WHO
// (operator): it ends the silence now; 200 with the silence as expired,
// by the caller (actor).
func (s *Server) apiExpireSilence(w http.ResponseWriter, r *http.Request) {
	if s.sil == nil {
		writeError(w, http.StatusNotImplemented, msgNoSilences)
		return
	}
	id, by := r.PathValue("id"), actor(r, r.URL.Query().Get("by"))
	x, err := s.sil.ExpireSilence(r.Context(), id, by)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown silence")
		return
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	default:
		s.internalError(w, r, err)
		return
	}
	s.o.Logger.Info("silence expired through the api", "silence", x.ID, "by", by)
	writeJSON(w, http.StatusOK, toAPISilence(x, s.o.Now()))
}

// actor is who a record names as having acted: the authenticated
// identity (Identity.Actor), never what the request claims. A person
// signed in (through the proxy or a session) is named alone; an API
// token (shared by a CLI's users or a CI job) is named with the name the
// client gives, marked as a claim: "token:ci (claimed: dave)".
func actor(r *http.Request, claimed string) string {
	id, _ := IdentityFrom(r.Context())
	claimed = strings.Join(strings.Fields(claimed), " ")
	if id.ambient() || claimed == "" || claimed == id.Actor() {
		return id.Actor()
	}
	return id.Actor() + " (claimed: " + claimed + ")"
}

// --- pages ---

// holdSpan is one reason a workspace's notifications are held: a
// silence or a maintenance window, from From until Until.
type holdSpan struct {
	From, Until time.Time
	Silence     *store.Silence     // nil for a window
	Window      *MaintenanceWindow // nil for a silence
}

// hold is what holds a workspace's notifications: Active now until Until
// (the reasons chained end to end), or the next span to come.
type hold struct {
	Active      bool
	From, Until time.Time
	// Spans are the reasons, in order: while Active, every span of the
	// chain; otherwise the next one alone.
	Spans []holdSpan
}

// windowMatches reports whether a maintenance window covers the
// workspace: its name matches one of the window's globs (path.Match), if
// it has any, and it carries all the window's labels, if it has any. A
// window with neither covers every workspace.
func windowMatches(m MaintenanceWindow, name string, labels map[string]string) bool {
	if len(m.Workspaces) > 0 {
		if !slices.ContainsFunc(m.Workspaces, func(g string) bool {
			ok, err := path.Match(g, name)
			return err == nil && ok
		}) {
			return false
		}
	}
	for k, v := range m.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// holdFor works out what holds the notifications of a workspace at now
// from the silences and windows: nil when nothing does, now or later.
// Spans that overlap or touch are chained, so "held until" is when
// messages are sent again.
func holdFor(now time.Time, name string, labels map[string]string, sils []store.Silence, wins []MaintenanceWindow) *hold {
	var spans []holdSpan
	for i := range sils {
		x := &sils[i]
		if x.Matches(name, labels) && x.EndsAt.After(now) {
			spans = append(spans, holdSpan{From: x.StartsAt, Until: x.EndsAt, Silence: x})
		}
	}
	for i := range wins {
		m := &wins[i]
		if !windowMatches(*m, name, labels) {
			continue
		}
		if m.Active && m.Ends.After(now) {
			spans = append(spans, holdSpan{From: m.Ends.Add(-m.Duration), Until: m.Ends, Window: m})
		}
		if !m.NextStart.IsZero() && m.NextStart.After(now) {
			spans = append(spans, holdSpan{From: m.NextStart, Until: m.NextStart.Add(m.Duration), Window: m})
		}
	}
	if len(spans) == 0 {
		return nil
	}
	slices.SortStableFunc(spans, func(a, b holdSpan) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return b.Until.Compare(a.Until)
	})
	h := &hold{}
	for _, sp := range spans {
		switch {
		case !h.Active && !sp.From.After(now):
			h.Active, h.From, h.Until = true, sp.From, sp.Until
		case h.Active && !sp.From.After(h.Until):
			h.Until = later(h.Until, sp.Until)
		case h.Active:
			continue // a later span, after a gap: not part of this hold
		default:
			// Nothing holds now: the first span to come.
			return &hold{From: sp.From, Until: sp.Until, Spans: []holdSpan{sp}}
		}
		h.Spans = append(h.Spans, sp)
	}
	return h
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// heldWorkspace is a workspace whose notifications are held now.
type heldWorkspace struct {
	Name string
	Hold *hold
}

// silenceView is a silence on a page: what it matches now.
type silenceView struct {
	store.Silence
	Active bool
	// Matched are the configured workspaces it holds, by name.
	Matched []string
}

// windowView is a maintenance window on a page.
type windowView struct {
	MaintenanceWindow
	Matched []string
}

type silencesPageData struct {
	page
	// Available: the daemon has silences (else the page says so).
	Available bool
	Held      []heldWorkspace
	Silences  []silenceView
	Windows   []windowView
	APIBase   string
}

// silenceState is a silence's state on a page: "active" or "scheduled".
func silenceState(v silenceView) string {
	if v.Active {
		return "active"
	}
	return "scheduled"
}

// shortDuration is d without zero units: "2h", "30m", "1h30m".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// labelPairs is labels as sorted "k=v" strings.
func labelPairs(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k+"="+labels[k])
	}
	return out
}

// silencesSummary builds the silences page's data: the held workspaces
// (soonest release first), the silences and the windows with the
// configured workspaces each one matches.
func silencesSummary(now time.Time, infos []WorkspaceInfo, sils []store.Silence, wins []MaintenanceWindow) (held []heldWorkspace, sv []silenceView, wv []windowView) {
	infos = slices.SortedFunc(slices.Values(infos), func(a, b WorkspaceInfo) int { return cmp.Compare(a.Name, b.Name) })
	for _, info := range infos {
		if h := holdFor(now, info.Name, info.Labels, sils, wins); h != nil && h.Active {
			held = append(held, heldWorkspace{Name: info.Name, Hold: h})
		}
	}
	slices.SortStableFunc(held, func(a, b heldWorkspace) int { return a.Hold.Until.Compare(b.Hold.Until) })
	for _, x := range sils {
		v := silenceView{Silence: x, Active: x.Active(now)}
		for _, info := range infos {
			if x.Matches(info.Name, info.Labels) {
				v.Matched = append(v.Matched, info.Name)
			}
		}
		sv = append(sv, v)
	}
	// Active silences first, each group soonest end first (the order the
	// daemon lists them in).
	slices.SortStableFunc(sv, func(a, b silenceView) int {
		if a.Active != b.Active {
			if a.Active {
				return -1
			}
			return 1
		}
		return 0
	})
	for _, m := range wins {
		v := windowView{MaintenanceWindow: m}
		for _, info := range infos {
			if windowMatches(m, info.Name, info.Labels) {
				v.Matched = append(v.Matched, info.Name)
			}
		}
		wv = append(wv, v)
	}
	slices.SortStableFunc(wv, func(a, b windowView) int {
		if a.Active != b.Active {
			if a.Active {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return held, sv, wv
}

// silencesPage serves GET /silences: what holds notifications now, every
// silence and every maintenance window, for whoever wonders why they were
// not paged (or will not be).
func (s *Server) silencesPage(w http.ResponseWriter, r *http.Request, t *template.Template) {
	if t == nil {
		s.pageError(w, r, errors.New("the silences page template did not parse"))
		return
	}
	data := silencesPageData{page: s.newPage(r, "driftwatch: silences", true), APIBase: s.apiBase}
	if s.sil == nil {
		s.render(w, r, http.StatusNotImplemented, t, data)
		return
	}
	sils, wins, err := s.silences(r, data.Now)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	data.Available = true
	data.Held, data.Silences, data.Windows = silencesSummary(data.Now, s.o.Control.Workspaces(), sils, wins)
	s.render(w, r, http.StatusOK, t, data)
}

// heldNow lists the configured workspaces whose notifications are held
// now, soonest release first (nil without SilenceControl).
func (s *Server) heldNow(r *http.Request, now time.Time) ([]heldWorkspace, error) {
	if s.sil == nil {
		return nil, nil
	}
	sils, wins, err := s.silences(r, now)
	if err != nil {
		return nil, err
	}
	held, _, _ := silencesSummary(now, s.o.Control.Workspaces(), sils, wins)
	return held, nil
}

// heldBy indexes held workspaces by name, for the status page's rows.
func heldBy(held []heldWorkspace) map[string]*hold {
	out := make(map[string]*hold, len(held))
	for _, h := range held {
		out[h.Name] = h.Hold
	}
	return out
}

// holdOf is what holds a workspace's notifications now or next (nil:
// nothing, or no SilenceControl).
func (s *Server) holdOf(r *http.Request, now time.Time, info WorkspaceInfo) (*hold, error) {
	if s.sil == nil {
		return nil, nil
	}
	sils, wins, err := s.silences(r, now)
	if err != nil {
		return nil, err
	}
	return holdFor(now, info.Name, info.Labels, sils, wins), nil
}
