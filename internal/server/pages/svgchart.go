package pages

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// chart is one line chart of per-day values, rendered as inline SVG by
// svg (no script, no style attribute: colours come from the stylesheet
// through each series' class) and as a table by the page, for screen
// readers.
type chart struct {
	// ID is unique in the page; it prefixes the ids of the SVG's title
	// and description.
	ID    string
	Title string
	// Unit names the values' unit ("workspaces", "hours", "%").
	Unit string
	// Labels are the x values, one per day ("2026-03-01").
	Labels []string
	Series []chartSeries
}

// chartSeries is one line; a NaN value is a day without a value (the
// line breaks there).
type chartSeries struct {
	Name string
	// Class colours the line (a CSS class: c-drift, c-errored...).
	Class  string
	Values []float64
}

// The chart's geometry, in SVG user units (it scales to its box).
const (
	chartW, chartH             = 960, 220
	chartLeft, chartRight      = 44, 10
	chartTop, chartBottom      = 10, 24
	chartPlotW, chartPlotH     = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	chartYTicks, chartMaxXTick = 4, 5
)

// max is the largest value of any series (0 without values).
func (c chart) max() float64 {
	m := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) && v > m {
				m = v
			}
		}
	}
	return m
}

// niceStep is the y axis' tick step for values up to v: the smallest
// 1, 2 or 5 times a power of ten whose chartYTicks steps reach v (1 for v
// <= 0), so that every tick is a round number.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	v /= chartYTicks
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// num formats a value for a label or a table cell: at most two
// decimals, none when whole.
func num(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// coord formats an SVG coordinate with one decimal.
func coord(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// desc summarizes the chart for assistive technology: the days covered
// and, per series, its last value and its highest with the day.
func (c chart) desc() string {
	var b strings.Builder
	if len(c.Labels) == 0 {
		return "No days."
	}
	fmt.Fprintf(&b, "Daily %s from %s to %s.", c.Unit, c.Labels[0], c.Labels[len(c.Labels)-1])
	for _, s := range c.Series {
		hi, at, last, n := math.NaN(), "", math.NaN(), 0
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			n++
			last = v
			if math.IsNaN(hi) || v > hi {
				hi, at = v, c.Labels[i]
			}
		}
		if n == 0 {
			fmt.Fprintf(&b, " %s: no values.", s.Name)
			continue
		}
		fmt.Fprintf(&b, " %s: highest %s on %s, last %s.", s.Name, num(hi), at, num(last))
	}
	return b.String()
}

// svg renders the chart. Every text in it is escaped.
func (c chart) svg() template.HTML {
	esc := template.HTMLEscapeString
	step := niceStep(c.max())
	top := step * chartYTicks
	n := len(c.Labels)
	x := func(i int) float64 {
		if n <= 1 {
			return chartLeft + chartPlotW/2
		}
		return chartLeft + float64(i)*chartPlotW/float64(n-1)
	}
	y := func(v float64) float64 { return chartTop + chartPlotH - v/top*chartPlotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-title %s-desc" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, esc(c.ID), esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, esc(c.ID), esc(c.Title), esc(c.ID), esc(c.desc()))
	// The axes and their labels are decoration for sight: the title,
	// the description and the table say it all.
	b.WriteString(`<g class="axis" aria-hidden="true">`)
	for i := 0; i <= chartYTicks; i++ {
		v := step * float64(i)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/>`, chartLeft, chartW-chartRight, coord(y(v)), coord(y(v)))
		fmt.Fprintf(&b, `<text class="ytick" x="%d" y="%s" text-anchor="end">%s</text>`, chartLeft-4, coord(y(v)+4), esc(num(v)))
	}
	for _, i := range xTicks(n) {
		anchor := "middle"
		switch {
		case n > 1 && i == 0:
			anchor = "start"
		case n > 1 && i == n-1:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="xtick" x="%s" y="%d" text-anchor="%s">%s</text>`, coord(x(i)), chartH-6, anchor, esc(c.Labels[i]))
	}
	b.WriteString(`</g>`)
	for _, s := range c.Series {
		fmt.Fprintf(&b, `<g class="series %s" aria-hidden="true">`, esc(s.Class))
		// Runs of days with a value are lines; a day alone between days
		// without one is a dot (a path of one point draws nothing).
		var path []string
		for i := 0; i < n && i < len(s.Values); {
			if math.IsNaN(s.Values[i]) {
				i++
				continue
			}
			j := i
			for j+1 < n && j+1 < len(s.Values) && !math.IsNaN(s.Values[j+1]) {
				j++
			}
			if i == j {
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5"/>`, coord(x(i)), coord(y(s.Values[i])))
			} else {
				for k := i; k <= j; k++ {
					cmd := "L"
					if k == i {
						cmd = "M"
					}
					path = append(path, cmd+coord(x(k))+" "+coord(y(s.Values[k])))
				}
			}
			i = j + 1
		}
		if len(path) > 0 {
			fmt.Fprintf(&b, `<path d="%s"/>`, strings.Join(path, " "))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // every interpolated text is escaped above
}

// xTicks picks at most chartMaxXTick evenly spaced day indexes, the first
// and the last included.
func xTicks(n int) []int {
	switch {
	case n <= 0:
		return nil
	case n <= chartMaxXTick:
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, chartMaxXTick)
	for k := range out {
		out[k] = int(math.Round(float64(k) * float64(n-1) / float64(chartMaxXTick-1)))
	}
	return out
}
