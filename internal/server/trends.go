package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
)

// defaultSince is the trends' window when the request names none.
const defaultSince = "30d"

// maxLabelChoices bounds the values of one label key the Trends page
// offers as filter links; a key with more (a repository name, say) is
// left out of the links and can still be given in the URL.
const maxLabelChoices = 20

// errStatsUnsupported: the store keeps no history the server can read
// trends from (it does not implement store.StatsReader).
var errStatsUnsupported = errors.New("trends are not available: this driftwatch's store cannot read run history for statistics")

// statsRoutes registers GET /api/v1/stats and the Trends page, GET
// /trends, for viewers.
func (s *Server) statsRoutes(mux *router) {
	mux.handle("GET /api/v1/stats", RoleViewer, s.apiStats)
	t, err := s.trendsTemplate()
	if err != nil {
		// The template is embedded: only a broken build gets here, and
		// the page test catches it. The API does not depend on it.
		s.o.Logger.Error("parse the trends page", "err", err)
	}
	mux.handle("GET /trends", RoleViewer, func(w http.ResponseWriter, r *http.Request) { s.trendsPage(w, r, t) })
}

// statsFilter is what a stats request asks for, as the response echoes
// it.
type statsFilter struct {
	// Since is the window as given ("30d", "12h").
	Since string `json:"since"`
	// Labels must all be on a workspace (AND); Owner must be its owner.
	Labels labelList `json:"labels"`
	Owner  string    `json:"owner"`
	// MatchedWorkspaces counts the configured workspaces the labels and
	// owner select; nil without either (every workspace with history,
	// including workspaces no longer configured).
	MatchedWorkspaces *int `json:"matched_workspaces"`

	since time.Time
}

// labelList is the label filter in the order given, as JSON an object.
type labelList [][2]string

func (l labelList) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, kv := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(kv[0])
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(kv[1])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func (f statsFilter) filtered() bool { return len(f.Labels) > 0 || f.Owner != "" }

// parseStatsFilter reads since (Nd or Nh, default 30d), label (k=v,
// repeatable) and owner; any other parameter is an error, so that a
// misspelt filter is not silently ignored. Errors name the parameter.
func parseStatsFilter(q url.Values, now time.Time) (statsFilter, error) {
	var f statsFilter
	for k, vs := range q {
		switch k {
		case "since", "owner":
			if len(vs) > 1 {
				return f, fmt.Errorf("query parameter %s: given %d times, at most once", k, len(vs))
			}
		case "label":
		default:
			return f, fmt.Errorf("unknown query parameter %q: want since, label or owner", k)
		}
	}
	f.Since = cmp.Or(q.Get("since"), defaultSince)
	since, err := stats.ParseSince(f.Since, now)
	if err != nil {
		return f, fmt.Errorf("query parameter since: %w", err)
	}
	f.since = since
	for _, kv := range q["label"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return f, fmt.Errorf("query parameter label: %q is not key=value", kv)
		}
		f.Labels = append(f.Labels, [2]string{k, v})
	}
	f.Owner = q.Get("owner")
	if _, ok := q["owner"]; ok && f.Owner == "" {
		return f, errors.New("query parameter owner: empty; leave it out for every owner")
	}
	return f, nil
}

// matches reports whether a configured workspace passes the filter.
func (f statsFilter) matches(w WorkspaceInfo) bool {
	if f.Owner != "" && w.Owner != f.Owner {
		return false
	}
	for _, kv := range f.Labels {
		if v, ok := w.Labels[kv[0]]; !ok || v != kv[1] {
			return false
		}
	}
	return true
}

// statsResponse is GET /api/v1/stats' answer: the filter, then the
// report (stats.Report documents each field).
type statsResponse struct {
	Filter statsFilter `json:"filter"`
	stats.Report
}

// Limits of the statistics (GET /api/v1/stats, the Trends page), which
// read every run of their window: at most MaxStatsConcurrent are
// computed at once (one more answers 503), and each answer is kept for
// StatsCacheTTL per filter (at most maxStatsCacheEntries filters).
const (
	MaxStatsConcurrent   = 4
	StatsCacheTTL        = time.Minute
	maxStatsCacheEntries = 256
)

// errStatsBusy: MaxStatsConcurrent statistics are being computed.
var errStatsBusy = errors.New("too many statistics are being computed: try again in a few seconds")

// statsCache bounds and caches the statistics (the limits above).
type statsCache struct {
	sem     chan struct{}
	mu      sync.Mutex
	entries map[string]statsEntry
}

type statsEntry struct {
	at      time.Time
	rep     stats.Report
	matched *int
}

func newStatsCache() *statsCache {
	return &statsCache{sem: make(chan struct{}, MaxStatsConcurrent), entries: map[string]statsEntry{}}
}

// get returns the answer kept for key, if younger than StatsCacheTTL.
func (c *statsCache) get(key string, now time.Time) (statsEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.Sub(e.at) >= StatsCacheTTL || now.Before(e.at) {
		return statsEntry{}, false
	}
	return e, true
}

// put keeps an answer, dropping expired ones and, when full, the oldest.
func (c *statsCache) put(key string, e statsEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, old := range c.entries {
		if e.at.Sub(old.at) >= StatsCacheTTL {
			delete(c.entries, k)
		}
	}
	for len(c.entries) >= maxStatsCacheEntries {
		oldest := ""
		for k, old := range c.entries {
			if oldest == "" || old.at.Before(c.entries[oldest].at) {
				oldest = k
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[key] = e
}

// cacheKey names what a filter asks for.
func (f statsFilter) cacheKey() string {
	var b strings.Builder
	b.WriteString(f.Since + "\x00" + f.Owner)
	for _, kv := range f.Labels {
		b.WriteString("\x00" + kv[0] + "=" + kv[1])
	}
	return b.String()
}

// statsReport is the statistics of f: kept from a request of the last
// StatsCacheTTL, else computed (computeStats) unless MaxStatsConcurrent
// already are (errStatsBusy).
func (s *Server) statsReport(ctx context.Context, f *statsFilter) (stats.Report, error) {
	if _, ok := s.o.Store.(store.StatsReader); !ok {
		return stats.Report{}, errStatsUnsupported
	}
	key, now := f.cacheKey(), s.o.Now()
	if e, ok := s.stats.get(key, now); ok {
		f.MatchedWorkspaces = e.matched
		return e.rep, nil
	}
	select {
	case s.stats.sem <- struct{}{}:
		defer func() { <-s.stats.sem }()
	default:
		return stats.Report{}, errStatsBusy
	}
	rep, err := s.computeStats(ctx, f)
	if err == nil {
		s.stats.put(key, statsEntry{at: now, rep: rep, matched: f.MatchedWorkspaces})
	}
	return rep, err
}

// computeStats reads the filter's window from the store into a Report.
// With labels or an owner it reads only the configured workspaces that
// match (none: an empty report, every day present).
func (s *Server) computeStats(ctx context.Context, f *statsFilter) (stats.Report, error) {
	reader, ok := s.o.Store.(store.StatsReader)
	if !ok {
		return stats.Report{}, errStatsUnsupported
	}
	acc, err := stats.NewAccumulator(f.since, s.o.Now())
	if err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	var names []string
	if f.filtered() {
		for _, w := range s.o.Control.Workspaces() {
			if f.matches(w) {
				names = append(names, w.Name)
			}
		}
		n := len(names)
		f.MatchedWorkspaces = &n
		if n == 0 {
			return acc.Report(nil), nil
		}
	}
	err = reader.StatsRuns(ctx, store.StatsQuery{Since: f.since, Workspaces: names}, func(r store.StatsRun) error {
		return acc.Add(stats.Run{ID: r.ID, Workspace: r.Workspace, Started: r.StartedAt, Finished: r.FinishedAt, Status: r.Status, Before: r.Before})
	})
	if err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	counts, err := reader.DriftedTypes(ctx, acc.DriftRuns())
	if err != nil {
		return stats.Report{}, fmt.Errorf("stats: %w", err)
	}
	types := make([]stats.TypeCount, 0, len(counts))
	for _, c := range counts {
		types = append(types, stats.TypeCount{Type: c.Type, WorkspaceDays: c.Runs, Workspaces: c.Workspaces})
	}
	return acc.Report(types), nil
}

// apiStats serves GET /api/v1/stats.
func (s *Server) apiStats(w http.ResponseWriter, r *http.Request) {
	f, err := parseStatsFilter(r.URL.Query(), s.o.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rep, err := s.statsReport(r.Context(), &f)
	if errors.Is(err, errStatsUnsupported) {
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	}
	if errors.Is(err, errStatsBusy) {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if err != nil {
		s.o.Logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error: read statistics")
		return
	}
	writeJSON(w, http.StatusOK, statsResponse{Filter: f, Report: rep})
}

// trendsTemplate is the Trends page.
func (s *Server) trendsTemplate() (*template.Template, error) {
	return s.extraPage("trends.html", template.FuncMap{"num": num, "pct": func(v float64) string { return num(v*100) + "%" }})
}

// filterLink is one choice of the page's filters: a link, or the
// current choice (Active, no link needed).
type filterLink struct {
	Text, Href string
	Active     bool
}

// chartView is a chart with its SVG and its table.
type chartView struct {
	chart
	SVG  template.HTML
	Rows []chartRow
}

type chartRow struct {
	Label  string
	Values []string
}

type trendsPageData struct {
	page
	Filter  statsFilter
	Report  stats.Report
	Charts  []chartView
	Periods []filterLink
	Owners  []filterLink
	Labels  []labelChoice
	// Active are the label filters, each with the link that drops it;
	// Clear drops every filter but the period.
	Active  []filterLink
	Clear   string
	APIPath string
	// Matched counts the configured workspaces the filter selects.
	Matched int
	// Totals in the units the page shows.
	MTTD, MTTR, P95Run string
}

// labelChoice is one label key's values as filter links.
type labelChoice struct {
	Key    string
	Values []filterLink
}

func (s *Server) trendsPage(w http.ResponseWriter, r *http.Request, t *template.Template) {
	if t == nil {
		s.pageError(w, r, errors.New("the trends page template did not parse"))
		return
	}
	f, err := parseStatsFilter(r.URL.Query(), s.o.Now())
	if err != nil {
		s.render(w, r, http.StatusBadRequest, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: bad request", false),
			Heading: "Bad request",
			Message: err.Error() + ".",
		})
		return
	}
	rep, err := s.statsReport(r.Context(), &f)
	if errors.Is(err, errStatsUnsupported) {
		s.render(w, r, http.StatusNotImplemented, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: trends unavailable", false),
			Heading: "Trends unavailable",
			Message: err.Error() + ".",
		})
		return
	}
	if errors.Is(err, errStatsBusy) {
		w.Header().Set("Retry-After", "5")
		s.render(w, r, http.StatusServiceUnavailable, s.pages.message, messagePageData{
			page:    s.newPage(r, "driftwatch: trends busy", false),
			Heading: "Trends busy",
			Message: strings.ToUpper(err.Error()[:1]) + err.Error()[1:] + ".",
		})
		return
	}
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	d := trendsPageData{
		page:    s.newPage(r, "driftwatch: trends, "+f.Since, false),
		Filter:  f,
		Report:  rep,
		Charts:  trendCharts(rep),
		APIPath: s.prefix + "/api/v1/stats?" + statsQuery(f.Since, f.Labels, f.Owner).Encode(),
		MTTD:    fmtSeconds(rep.Totals.MeanTimeToDetectSeconds),
		MTTR:    fmtSeconds(rep.Totals.MeanTimeToResolveSeconds),
		P95Run:  fmtSeconds(rep.Totals.P95RunDurationSeconds),
	}
	if f.MatchedWorkspaces != nil {
		d.Matched = *f.MatchedWorkspaces
	}
	d.Periods, d.Owners, d.Labels, d.Active, d.Clear = s.trendLinks(f)
	s.render(w, r, http.StatusOK, t, d)
}

// statsQuery is the query string of a trends URL.
func statsQuery(since string, labels labelList, owner string) url.Values {
	q := url.Values{"since": {since}}
	for _, kv := range labels {
		q.Add("label", kv[0]+"="+kv[1])
	}
	if owner != "" {
		q.Set("owner", owner)
	}
	return q
}

// trendLinks builds the filter links: the page has no form (its
// Content-Security-Policy allows none to be sent), so every choice is a
// link that keeps the other choices.
func (s *Server) trendLinks(f statsFilter) (periods, owners []filterLink, labels []labelChoice, active []filterLink, clearAll string) {
	href := func(since string, ls labelList, owner string) string {
		return s.prefix + "/trends?" + statsQuery(since, ls, owner).Encode()
	}
	for _, p := range []string{"24h", "7d", "30d", "90d", "400d"} {
		periods = append(periods, filterLink{Text: p, Href: href(p, f.Labels, f.Owner), Active: p == f.Since})
	}
	ws := s.o.Control.Workspaces()
	ownerSet := map[string]bool{}
	values := map[string]map[string]bool{}
	for _, w := range ws {
		if w.Owner != "" {
			ownerSet[w.Owner] = true
		}
		for k, v := range w.Labels {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	if len(ownerSet) > 0 {
		owners = append(owners, filterLink{Text: "any", Href: href(f.Since, f.Labels, ""), Active: f.Owner == ""})
		for _, o := range slices.Sorted(maps.Keys(ownerSet)) {
			owners = append(owners, filterLink{Text: o, Href: href(f.Since, f.Labels, o), Active: o == f.Owner})
		}
	}
	with := func(k, v string) labelList {
		var out labelList
		for _, kv := range f.Labels {
			if kv[0] != k {
				out = append(out, kv)
			}
		}
		return append(out, [2]string{k, v})
	}
	isActive := func(k, v string) bool { return slices.Contains(f.Labels, [2]string{k, v}) }
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if len(values[k]) > maxLabelChoices {
			continue
		}
		c := labelChoice{Key: k}
		for _, v := range slices.Sorted(maps.Keys(values[k])) {
			c.Values = append(c.Values, filterLink{Text: v, Href: href(f.Since, with(k, v), f.Owner), Active: isActive(k, v)})
		}
		labels = append(labels, c)
	}
	for i, kv := range f.Labels {
		rest := slices.Concat(f.Labels[:i], f.Labels[i+1:])
		active = append(active, filterLink{Text: kv[0] + "=" + kv[1], Href: href(f.Since, rest, f.Owner)})
	}
	return periods, owners, labels, active, href(f.Since, nil, "")
}

// trendCharts are the page's charts, in the order it shows them.
func trendCharts(rep stats.Report) []chartView {
	days := rep.Days
	labels := make([]string, len(days))
	for i, d := range days {
		labels[i] = d.Date
	}
	ints := func(get func(stats.Day) int) []float64 {
		out := make([]float64, len(days))
		for i, d := range days {
			out[i] = float64(get(d))
		}
		return out
	}
	opt := func(get func(stats.Day) *float64) []float64 {
		out := make([]float64, len(days))
		for i, d := range days {
			out[i] = math.NaN()
			if p := get(d); p != nil {
				out[i] = *p
			}
		}
		return out
	}
	times := func(series ...chartSeries) (string, []chartSeries) {
		m := 0.0
		for _, s := range series {
			for _, v := range s.Values {
				if !math.IsNaN(v) {
					m = max(m, v)
				}
			}
		}
		unit, div := timeUnit(m)
		for i := range series {
			vs := slices.Clone(series[i].Values)
			for j := range vs {
				vs[j] /= div
			}
			series[i].Values = vs
		}
		return unit, series
	}
	var charts []chart
	charts = append(charts, chart{ID: "chart-workspaces", Title: "Workspaces with drift, forbidden resources or errors, per day", Unit: "workspaces",
		Series: []chartSeries{
			{"drifted", "c-drift", ints(func(d stats.Day) int { return d.WorkspacesDrifted })},
			{"forbidden", "c-forbidden", ints(func(d stats.Day) int { return d.WorkspacesForbidden })},
			{"errored", "c-errored", ints(func(d stats.Day) int { return d.WorkspacesErrored })},
		}})
	charts = append(charts, chart{ID: "chart-incidents", Title: "Incidents opened and resolved, per day", Unit: "incidents",
		Series: []chartSeries{
			{"opened", "c-drift", ints(func(d stats.Day) int { return d.IncidentsOpened })},
			{"resolved", "c-clean", ints(func(d stats.Day) int { return d.IncidentsResolved })},
		}})
	unit, ss := times(
		chartSeries{"mean", "c-running", opt(func(d stats.Day) *float64 { return d.MeanTimeToDetectSeconds })},
		chartSeries{"p90", "c-validation", opt(func(d stats.Day) *float64 { return d.P90TimeToDetectSeconds })})
	charts = append(charts, chart{ID: "chart-detect", Title: "Time to detect drift, by day of detection", Unit: unit, Series: ss})
	unit, ss = times(
		chartSeries{"mean", "c-running", opt(func(d stats.Day) *float64 { return d.MeanTimeToResolveSeconds })},
		chartSeries{"p90", "c-validation", opt(func(d stats.Day) *float64 { return d.P90TimeToResolveSeconds })})
	charts = append(charts, chart{ID: "chart-resolve", Title: "Time to resolve drift, by day of resolution", Unit: unit, Series: ss})
	unit, ss = times(
		chartSeries{"p50", "c-running", opt(func(d stats.Day) *float64 { return d.P50RunDurationSeconds })},
		chartSeries{"p95", "c-validation", opt(func(d stats.Day) *float64 { return d.P95RunDurationSeconds })})
	charts = append(charts, chart{ID: "chart-duration", Title: "Run duration, per day", Unit: unit, Series: ss})
	rate := make([]float64, len(days))
	for i, d := range days {
		rate[i] = math.NaN()
		if d.Runs.Runs > 0 {
			rate[i] = d.ErrorRate * 100
		}
	}
	charts = append(charts, chart{ID: "chart-errors", Title: "Runs that errored, per day", Unit: "% of runs",
		Series: []chartSeries{{"error rate", "c-errored", rate}}})

	out := make([]chartView, len(charts))
	for i, c := range charts {
		c.Labels = labels
		v := chartView{chart: c, SVG: c.svg()}
		for j, l := range labels {
			row := chartRow{Label: l}
			for _, s := range c.Series {
				row.Values = append(row.Values, num(s.Values[j]))
			}
			v.Rows = append(v.Rows, row)
		}
		out[i] = v
	}
	return out
}

// timeUnit picks the unit a chart of durations up to maxSeconds reads
// best in, and the divisor from seconds.
func timeUnit(maxSeconds float64) (string, float64) {
	switch {
	case maxSeconds >= 2*24*3600:
		return "days", 24 * 3600
	case maxSeconds >= 2*3600:
		return "hours", 3600
	case maxSeconds >= 120:
		return "minutes", 60
	}
	return "seconds", 1
}

// fmtSeconds formats an optional number of seconds for the page ("—"
// without one).
func fmtSeconds(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmtDuration(time.Duration(*v * float64(time.Second)))
}
