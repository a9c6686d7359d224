package pages

import (
	"cmp"
	"errors"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// holdSpan is one reason a workspace's notifications are held: a
// silence or a maintenance window, from From until Until.
type holdSpan struct {
	From, Until time.Time
	Silence     *store.Silence             // nil for a window
	Window      *control.MaintenanceWindow // nil for a silence
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
func windowMatches(m control.MaintenanceWindow, name string, labels map[string]string) bool {
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
func holdFor(now time.Time, name string, labels map[string]string, sils []store.Silence, wins []control.MaintenanceWindow) *hold {
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
	control.MaintenanceWindow
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

// silencesSummary builds the silences page's data: the held workspaces
// (soonest release first), the silences and the windows with the
// configured workspaces each one matches.
func silencesSummary(now time.Time, infos []control.WorkspaceInfo, sils []store.Silence, wins []control.MaintenanceWindow) (held []heldWorkspace, sv []silenceView, wv []windowView) {
	infos = slices.SortedFunc(slices.Values(infos), func(a, b control.WorkspaceInfo) int { return cmp.Compare(a.Name, b.Name) })
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

// Silences serves GET /silences: what holds notifications now, every
// silence and every maintenance window, for whoever wonders why they were
// not paged (or will not be).
func (p *Pages) Silences(w http.ResponseWriter, r *http.Request) {
	t := p.silences
	if t == nil {
		p.pageError(w, r, errors.New("the silences page template did not parse"))
		return
	}
	data := silencesPageData{page: p.newPage(r, "driftwatch: silences", true), APIBase: p.src.APIBase}
	if p.src.Sil == nil {
		p.render(w, r, http.StatusNotImplemented, t, data)
		return
	}
	sils, wins, err := p.src.Silences(r.Context(), data.Now)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	data.Available = true
	data.Held, data.Silences, data.Windows = silencesSummary(data.Now, p.src.Control.Workspaces(), sils, wins)
	p.render(w, r, http.StatusOK, t, data)
}

// heldNow lists the configured workspaces whose notifications are held
// now, soonest release first (nil without SilenceControl).
func (p *Pages) heldNow(r *http.Request, now time.Time) ([]heldWorkspace, error) {
	if p.src.Sil == nil {
		return nil, nil
	}
	sils, wins, err := p.src.Silences(r.Context(), now)
	if err != nil {
		return nil, err
	}
	held, _, _ := silencesSummary(now, p.src.Control.Workspaces(), sils, wins)
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
func (p *Pages) holdOf(r *http.Request, now time.Time, info control.WorkspaceInfo) (*hold, error) {
	if p.src.Sil == nil {
		return nil, nil
	}
	sils, wins, err := p.src.Silences(r.Context(), now)
	if err != nil {
		return nil, err
	}
	return holdFor(now, info.Name, info.Labels, sils, wins), nil
}
