package pages

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {0.3, 0.1}, {1, 0.5}, {3, 1}, {4, 1}, {5, 2}, {8, 2}, {9, 5}, {20, 5}, {21, 10}, {240, 100}, {1000, 500},
	} {
		require.InDelta(t, tc.want, niceStep(tc.in), 1e-9, "niceStep(%v)", tc.in)
	}
}

func TestXTicks(t *testing.T) {
	require.Empty(t, xTicks(0))
	require.Equal(t, []int{0}, xTicks(1))
	require.Equal(t, []int{0, 1, 2, 3, 4}, xTicks(5))
	require.Equal(t, []int{0, 7, 15, 22, 29}, xTicks(30))
}

// TestChartSVG is the golden rendering of a small chart: the y axis runs
// to 4 (four steps of niceStep(3) = 1); a missing value breaks the line, and a value alone
// between gaps is a dot. Names are escaped.
func TestChartSVG(t *testing.T) {
	nan := math.NaN()
	c := chart{ID: "c1", Title: "A <b> chart", Unit: "runs", Labels: []string{"2026-03-01", "2026-03-02", "2026-03-03"},
		Series: []chartSeries{
			{"ok & fine", "c-clean", []float64{1, nan, 3}},
			{"bad", "c-errored", []float64{0, 2, nan}},
		}}
	// Plot: x from 44 to 950, y from 196 (0) up to 10 (4, four steps of
	// niceStep(3) = 1).
	want := `<svg class="chart" viewBox="0 0 960 220" role="img" aria-labelledby="c1-title c1-desc" xmlns="http://www.w3.org/2000/svg">` +
		`<title id="c1-title">A &lt;b&gt; chart</title>` +
		`<desc id="c1-desc">Daily runs from 2026-03-01 to 2026-03-03. ok &amp; fine: highest 3 on 2026-03-03, last 3. bad: highest 2 on 2026-03-02, last 2.</desc>` +
		`<g class="axis" aria-hidden="true">` +
		`<line class="grid" x1="44" x2="950" y1="196" y2="196"/><text class="ytick" x="40" y="200" text-anchor="end">0</text>` +
		`<line class="grid" x1="44" x2="950" y1="149.5" y2="149.5"/><text class="ytick" x="40" y="153.5" text-anchor="end">1</text>` +
		`<line class="grid" x1="44" x2="950" y1="103" y2="103"/><text class="ytick" x="40" y="107" text-anchor="end">2</text>` +
		`<line class="grid" x1="44" x2="950" y1="56.5" y2="56.5"/><text class="ytick" x="40" y="60.5" text-anchor="end">3</text>` +
		`<line class="grid" x1="44" x2="950" y1="10" y2="10"/><text class="ytick" x="40" y="14" text-anchor="end">4</text>` +
		`<text class="xtick" x="44" y="214" text-anchor="start">2026-03-01</text>` +
		`<text class="xtick" x="497" y="214" text-anchor="middle">2026-03-02</text>` +
		`<text class="xtick" x="950" y="214" text-anchor="end">2026-03-03</text></g>` +
		`<g class="series c-clean" aria-hidden="true"><circle cx="44" cy="149.5" r="2.5"/><circle cx="950" cy="56.5" r="2.5"/></g>` +
		`<g class="series c-errored" aria-hidden="true"><path d="M44 196 L497 103"/></g>` +
		`</svg>`
	require.Equal(t, want, string(c.svg()))
}
