package pages

import (
	"errors"
	"html/template"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/stats"
)

// MaxLabelChoices bounds the values of one label key the status and
// Trends pages offer as filter links; a key with more (a repository name, say) is
// left out of the links and can still be given in the URL.
const MaxLabelChoices = 20

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
	Filter view.StatsFilter
	Report stats.Report
	Charts []chartView
	// ScanCharts are the Scans section's; nil when no scan ran.
	ScanCharts []chartView
	Periods    []filterLink
	Owners     []filterLink
	Labels     []labelChoice
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

// Trends serves GET /trends: the Trends page, charts of /api/v1/stats
// (the same filters).
func (p *Pages) Trends(w http.ResponseWriter, r *http.Request) {
	t := p.trends
	if t == nil {
		p.pageError(w, r, errors.New("the trends page template did not parse"))
		return
	}
	f, err := view.ParseStatsFilter(r.URL.Query(), p.src.Now())
	if err != nil {
		p.badRequestPage(w, r, err)
		return
	}
	rep, err := p.src.Stats(r.Context(), &f)
	if errors.Is(err, view.ErrStatsUnsupported) {
		p.render(w, r, http.StatusNotImplemented, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: trends unavailable", false),
			Heading: "Trends unavailable",
			Message: err.Error() + ".",
		})
		return
	}
	if errors.Is(err, view.ErrStatsBusy) {
		w.Header().Set("Retry-After", "5")
		p.render(w, r, http.StatusServiceUnavailable, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: trends busy", false),
			Heading: "Trends busy",
			Message: strings.ToUpper(err.Error()[:1]) + err.Error()[1:] + ".",
		})
		return
	}
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	d := trendsPageData{
		page:       p.newPage(r, "driftwatch: trends, "+f.Since, false),
		Filter:     f,
		Report:     rep,
		Charts:     trendCharts(rep),
		ScanCharts: scanCharts(rep),
		APIPath:    p.src.Prefix + "/api/v1/stats?" + statsQuery(f.Since, f.Labels, f.Owner).Encode(),
		MTTD:       fmtSeconds(rep.Totals.MeanTimeToDetectSeconds),
		MTTR:       fmtSeconds(rep.Totals.MeanTimeToResolveSeconds),
		P95Run:     fmtSeconds(rep.Totals.P95RunDurationSeconds),
	}
	if f.MatchedWorkspaces != nil {
		d.Matched = *f.MatchedWorkspaces
	}
	d.Periods, d.Owners, d.Labels, d.Active, d.Clear = p.trendLinks(f)
	p.render(w, r, http.StatusOK, t, d)
}

// statsQuery is the query string of a trends URL.
func statsQuery(since string, labels view.LabelList, owner string) url.Values {
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
func (p *Pages) trendLinks(f view.StatsFilter) (periods, owners []filterLink, labels []labelChoice, active []filterLink, clearAll string) {
	href := func(since string, ls view.LabelList, owner string) string {
		return p.src.Prefix + "/trends?" + statsQuery(since, ls, owner).Encode()
	}
	for _, period := range []string{"24h", "7d", "30d", "90d", "400d"} {
		periods = append(periods, filterLink{Text: period, Href: href(period, f.Labels, f.Owner), Active: period == f.Since})
	}
	ws := p.src.Control.Workspaces()
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
	with := func(k, v string) view.LabelList {
		var out view.LabelList
		for _, kv := range f.Labels {
			if kv[0] != k {
				out = append(out, kv)
			}
		}
		return append(out, [2]string{k, v})
	}
	isActive := func(k, v string) bool { return slices.Contains(f.Labels, [2]string{k, v}) }
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if len(values[k]) > MaxLabelChoices {
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
			{"group incidents opened", "c-forbidden", ints(func(d stats.Day) int { return d.GroupIncidentsOpened })},
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
	return chartViews(dayLabels(days), charts)
}

// scanCharts are the Scans section's charts; none when no scan ran in
// the window.
func scanCharts(rep stats.Report) []chartView {
	if rep.Totals.Scans == nil {
		return nil
	}
	found := func(get func(stats.Found) int) []float64 {
		out := make([]float64, len(rep.Days))
		for i, d := range rep.Days {
			if d.Scans != nil {
				out[i] = float64(get(d.Scans.Found))
			}
		}
		return out
	}
	return chartViews(dayLabels(rep.Days), []chart{{ID: "chart-scans",
		Title: "Resources scans found, by each scan's last run of the day", Unit: "resources",
		Series: []chartSeries{
			{"unmanaged", "c-drift", found(func(f stats.Found) int { return f.Unmanaged })},
			{"managed twice", "c-forbidden", found(func(f stats.Found) int { return f.ManagedTwice })},
		}}})
}

// dayLabels are the days' dates, a chart's x values.
func dayLabels(days []stats.Day) []string {
	labels := make([]string, len(days))
	for i, d := range days {
		labels[i] = d.Date
	}
	return labels
}

// chartViews draws charts over the x values labels, each with its table.
func chartViews(labels []string, charts []chart) []chartView {
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
