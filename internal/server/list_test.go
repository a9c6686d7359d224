package server

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/pages"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// manyHarness configures n workspaces: ws-000 to ws-(n-1), owner team-a
// for even numbers and team-b for odd ones, env=prod for multiples of
// three (else staging); every fifth has drifted for i hours, the rest
// are clean for i minutes.
func manyHarness(t *testing.T, n int) *harness {
	t.Helper()
	h := newHarness(t)
	st := newFakeStore()
	h.store = st
	var infos []WorkspaceInfo
	for i := range n {
		name := fmt.Sprintf("ws-%03d", i)
		env := "staging"
		if i%3 == 0 {
			env = "prod"
		}
		infos = append(infos, WorkspaceInfo{Name: name, Owner: []string{"team-a", "team-b"}[i%2], Labels: map[string]string{"env": env}})
		s, since := drift.StatusClean, testNow.Add(-time.Duration(i)*time.Minute)
		if i%5 == 0 {
			s, since = drift.StatusDrift, testNow.Add(-time.Duration(i)*time.Hour)
		}
		st.setState(store.WorkspaceState{Workspace: name, Status: s, Since: since, LastRunAt: since})
	}
	h.setWorkspaces(infos)
	return h
}

// rowNames are the workspaces of a status page's table, in order.
func rowNames(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr class="s-row-[a-z]+" id="ws-([^"]+)">`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestStatusPageList(t *testing.T) {
	h := manyHarness(t, 120) // 24 drift (ws-000, ws-005, ...), 96 clean
	ts := serve(t, h.options())

	t.Run("first page", func(t *testing.T) {
		code, hdr, body := get(t, ts.URL+"/")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, hdr.Get("Content-Security-Policy"), "form-action 'self'")
		rows := rowNames(body)
		require.Len(t, rows, view.DefaultPerPage)
		// Drift first, longest drifted first; then clean, longest first.
		require.Equal(t, []string{"ws-115", "ws-110", "ws-105"}, rows[:3])
		require.Equal(t, []string{"ws-000", "ws-119", "ws-118"}, rows[23:26])
		require.Contains(t, body, `<p class="showing" role="status">Showing 1–50 of 120 workspaces`)
		require.Contains(t, body, `<span class="muted" aria-disabled="true">← Previous</span>`)
		require.Contains(t, body, `<a href="/?page=2" rel="next">Next →</a>`)
		require.Contains(t, body, `<span class="chip current" aria-current="page">1</span>`)
		require.Contains(t, body, `<a class="chip" href="/?page=3" aria-label="Page 3">3</a>`)
		require.Contains(t, body, `<a class="chip" href="/?status=drift" title="Show drift workspaces"><span class="dot s-drift"></span><b>24</b> drift</a>`)
		require.Contains(t, body, `<a class="chip" href="/?status=clean" title="Show clean workspaces"><span class="dot s-clean"></span><b>96</b> clean</a>`)
		require.Contains(t, body, `<a class="chip" href="/?owner=team-b">team-b</a>`)
		require.Contains(t, body, `<a class="chip" href="/?label=env%3Dprod">prod</a>`)
		require.Contains(t, body, `<title>driftwatch: 24 of 120 need attention</title>`)
		require.NotContains(t, body, "clear all filters")
	})
	t.Run("middle page keeps the filters in every link", func(t *testing.T) {
		_, _, body := get(t, ts.URL+"/?status=clean&label=env%3Dstaging&page=2&per_page=20")
		// clean and staging: i%5 != 0 and i%3 != 0: 64 of them, 4 pages of 20.
		require.Contains(t, body, "Showing 21–40 of 64 matching workspaces (120 configured)")
		rows := rowNames(body)
		require.Len(t, rows, 20)
		const keep = "label=env%3Dstaging&amp;per_page=20&amp;status=clean"
		require.Contains(t, body, `<a href="/?`+keep+`" rel="prev">← Previous</a>`)
		require.Contains(t, body, `<a href="/?`+strings.Replace(keep, "per_page", "page=3&amp;per_page", 1)+`" rel="next">Next →</a>`)
		require.Contains(t, body, `<span class="chip current" aria-current="page">2</span>`)
		// A status chip toggles its status, keeps the rest and goes back
		// to page 1; its count ignores the status filter.
		require.Contains(t, body, `<a class="chip current" href="/?label=env%3Dstaging&amp;per_page=20" aria-current="true" title="Remove this filter"><span class="dot s-clean"></span><b>64</b> clean</a>`)
		require.Contains(t, body, `<a class="chip" href="/?label=env%3Dstaging&amp;per_page=20&amp;status=drift&amp;status=clean" title="Show drift workspaces"><span class="dot s-drift"></span><b>16</b> drift</a>`)
		// Owner and label choices keep the other filters.
		require.Contains(t, body, `<a class="chip" href="/?label=env%3Dstaging&amp;owner=team-a&amp;per_page=20&amp;status=clean">team-a</a>`)
		require.Contains(t, body, `<a class="chip" href="/?label=env%3Dprod&amp;per_page=20&amp;status=clean">prod</a>`, "one value per key: prod replaces staging")
		require.Contains(t, body, `<strong class="chip current" aria-current="true">staging</strong>`)
		// The active filters, each with the link that drops it.
		require.Contains(t, body, `<a class="chip" href="/?label=env%3Dstaging&amp;per_page=20" title="Remove this filter">status clean`)
		require.Contains(t, body, `<a class="chip" href="/?per_page=20&amp;status=clean" title="Remove this filter">env=staging`)
		require.Contains(t, body, `<a href="/?per_page=20">clear all filters</a>`)
		// The search form keeps every parameter but q and page.
		require.Contains(t, body, `<input type="hidden" name="label" value="env=staging">`)
		require.Contains(t, body, `<input type="hidden" name="per_page" value="20">`)
		require.Contains(t, body, `<input type="hidden" name="status" value="clean">`)
		require.NotContains(t, body, `name="page"`)
		require.Contains(t, body, `<a href="/api/v1/workspaces?`+strings.Replace(keep, "per_page", "page=2&amp;per_page", 1)+`">as JSON</a>`)
	})
	t.Run("last page", func(t *testing.T) {
		_, _, body := get(t, ts.URL+"/?page=3")
		require.Len(t, rowNames(body), 20)
		require.Contains(t, body, "Showing 101–120 of 120 workspaces")
		require.Contains(t, body, `<a href="/?page=2" rel="prev">← Previous</a>`)
		require.Contains(t, body, `<span class="muted" aria-disabled="true">Next →</span>`)
	})
	t.Run("past the end", func(t *testing.T) {
		code, _, body := get(t, ts.URL+"/?owner=team-a&page=9")
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, rowNames(body))
		require.Contains(t, body, `Page 9 is past the end: 60 workspaces match, on 2 pages. <a href="/?owner=team-a&amp;page=2">Go to the last page</a>`)
	})
	t.Run("text search", func(t *testing.T) {
		_, _, body := get(t, ts.URL+"/?q=WS-11")
		require.Equal(t, []string{"ws-115", "ws-110", "ws-119", "ws-118", "ws-117", "ws-116", "ws-114", "ws-113", "ws-112", "ws-111"}, rowNames(body))
		require.Contains(t, body, `<input id="q" name="q" type="search" value="WS-11"`)
		require.Contains(t, body, `<a class="chip" href="/" title="Remove this filter">“WS-11”`)
		require.NotContains(t, body, `rel="next"`, "one page: no pager")
		require.NotContains(t, body, `aria-current="page"`)
	})
	t.Run("nothing matches", func(t *testing.T) {
		code, _, body := get(t, ts.URL+"/?q=nope&status=drift")
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, rowNames(body))
		require.Contains(t, body, `No workspace matches these filters. <a href="/">Clear all filters</a>`)
		require.Contains(t, body, `<title>driftwatch: 24 of 120 need attention · page 1, 0 shown</title>`, "the headline is about every workspace")
	})
}

func TestStatusPageBadParameters(t *testing.T) {
	ts := serve(t, newHarness(t).options())
	for query, want := range map[string]string{
		"status=drifted": "query parameter status: &#34;drifted&#34; is not a status",
		"page=0":         "query parameter page: &#34;0&#34; is not a positive integer",
		"per_page=1000":  "query parameter per_page: 1000 is more than 500",
		"label=env":      "query parameter label: &#34;env&#34; is not key=value",
		"owner=":         "query parameter owner: empty",
		"sort=random":    "query parameter sort",
		"statuss=drift":  "unknown query parameter &#34;statuss&#34;",
	} {
		t.Run(query, func(t *testing.T) {
			code, hdr, body := get(t, ts.URL+"/?"+query)
			require.Equal(t, http.StatusBadRequest, code)
			require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))
			require.Contains(t, body, "<h1>Bad request</h1>")
			require.Contains(t, body, want)
		})
	}
}

// Label values and the text filter reach links, the search box and the
// hidden fields escaped, and round-trip: following a link selects the
// same workspaces.
func TestStatusPageListEscaping(t *testing.T) {
	const evil = `"><script>alert(1)</script>&x=1 %41+`
	h := newHarness(t)
	h.setWorkspaces([]WorkspaceInfo{
		{Name: "evil", Owner: "o&" + evil, Labels: map[string]string{"k&<": evil}},
		{Name: "plain", Owner: "team", Labels: map[string]string{"k&<": "v"}},
	})
	ts := serve(t, h.options())

	q := url.Values{"label": {"k&<=" + evil}, "q": {"<i>x"}}
	_, _, body := get(t, ts.URL+"/?"+url.Values{"label": {"k&<=" + evil}}.Encode())
	require.Equal(t, []string{"evil"}, rowNames(body), "the label filter selects by the exact value")
	require.NotContains(t, strings.ToLower(body), "<script")

	_, _, body = get(t, ts.URL+"/?"+q.Encode())
	require.NotContains(t, strings.ToLower(body), "<script")
	require.NotContains(t, body, "<i>x")
	require.Contains(t, body, `value="&lt;i&gt;x"`)
	require.Contains(t, body, `<input type="hidden" name="label" value="k&amp;&lt;=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;x=1 %41&#43;">`)

	// Every link on the page parses back to the filters it claims.
	hrefs := regexp.MustCompile(`href="(/\?[^"]*)"`).FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, hrefs)
	var dropQ, ownerLink bool
	for _, m := range hrefs {
		u, err := url.Parse(html.UnescapeString(m[1]))
		require.NoError(t, err, m[1])
		got := u.Query()
		f, err := view.ParseListQuery(got)
		require.NoError(t, err, m[1])
		for _, kv := range f.Labels {
			if kv[1] != "v" { // the link that chooses the other value
				require.Equal(t, [2]string{"k&<", evil}, kv, "the label survives every link: %s", m[1])
			}
		}
		if got.Get("q") == "" && len(f.Labels) == 1 && f.Owner == "" {
			dropQ = true
		}
		if f.Owner == "o&"+evil {
			ownerLink = true
			require.Equal(t, "<i>x", f.Q)
		}
	}
	require.True(t, dropQ, "the text filter has a link that drops it and keeps the label")
	require.True(t, ownerLink, "the owner choice keeps the text filter")
}

func TestAPIWorkspacesList(t *testing.T) {
	h := manyHarness(t, 120)
	ts := serve(t, h.options())

	type page struct {
		Workspaces []struct {
			Name   string       `json:"name"`
			Status drift.Status `json:"status"`
		} `json:"workspaces"`
		Total   *int `json:"total"`
		Page    int  `json:"page"`
		PerPage int  `json:"per_page"`
		Pages   int  `json:"pages"`
	}
	list := func(t *testing.T, query string) page {
		t.Helper()
		code, hdr, body := get(t, ts.URL+"/api/v1/workspaces"+query)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "application/json", hdr.Get("Content-Type"))
		var p page
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		return p
	}
	t.Run("without parameters: every workspace, by name, no paging fields", func(t *testing.T) {
		p := list(t, "")
		require.Len(t, p.Workspaces, 120)
		require.Equal(t, "ws-000", p.Workspaces[0].Name)
		require.Equal(t, "ws-119", p.Workspaces[119].Name)
		require.Nil(t, p.Total)
	})
	t.Run("default page", func(t *testing.T) {
		p := list(t, "?page=1")
		require.Equal(t, 120, *p.Total)
		require.Equal(t, 1, p.Page)
		require.Equal(t, view.DefaultPerPage, p.PerPage)
		require.Equal(t, 3, p.Pages)
		require.Len(t, p.Workspaces, view.DefaultPerPage)
		require.Equal(t, "ws-115", p.Workspaces[0].Name, "most severe, longest in it, first")
	})
	t.Run("filtered, last page", func(t *testing.T) {
		p := list(t, "?status=drift&owner=team-b&per_page=5&page=3")
		// drift and team-b: odd multiples of 5 below 120: 12 of them.
		require.Equal(t, 12, *p.Total)
		require.Equal(t, 3, p.Pages)
		require.Len(t, p.Workspaces, 2)
		require.Equal(t, "ws-015", p.Workspaces[0].Name)
		require.Equal(t, "ws-005", p.Workspaces[1].Name)
	})
	t.Run("by name", func(t *testing.T) {
		p := list(t, "?sort=name&per_page=2&page=2&label=env%3Dprod")
		require.Equal(t, 40, *p.Total)
		require.Equal(t, "ws-006", p.Workspaces[0].Name)
		require.Equal(t, "ws-009", p.Workspaces[1].Name)
	})
	t.Run("text", func(t *testing.T) {
		p := list(t, "?q=TEAM-A&status=clean&per_page=500")
		require.Equal(t, 48, *p.Total)
		for _, w := range p.Workspaces {
			require.Equal(t, drift.StatusClean, w.Status)
		}
	})
	t.Run("past the end", func(t *testing.T) {
		code, hdr, body := get(t, ts.URL+"/api/v1/workspaces?per_page=100&page=3")
		requireJSON(t, http.StatusOK, `{"workspaces": [], "total": 120, "page": 3, "per_page": 100, "pages": 2}`, code, hdr, body)
	})
	t.Run("bad parameters", func(t *testing.T) {
		for query, want := range map[string]string{
			"status=clear":  `query parameter status: \"clear\" is not a status: want errored, forbidden, drift, validation, pending, clean, unknown`,
			"per_page=501":  `query parameter per_page: 501 is more than 500`,
			"page=-1":       `query parameter page: \"-1\" is not a positive integer`,
			"label=env":     `query parameter label: \"env\" is not key=value`,
			"limit=10":      `unknown query parameter \"limit\": want status, label, owner, q, sort, page or per_page`,
			"q=a&q=b":       `query parameter q: given 2 times, at most once`,
			"owner=":        `query parameter owner: empty; leave it out for every owner`,
			"sort=severity": "",
		} {
			t.Run(query, func(t *testing.T) {
				code, hdr, body := get(t, ts.URL+"/api/v1/workspaces?"+query)
				if want == "" {
					require.Equal(t, http.StatusOK, code)
					return
				}
				requireJSON(t, http.StatusBadRequest, `{"error": "`+want+`"}`, code, hdr, body)
			})
		}
	})
}

// The page reads the real store's states: the order comes from the ages
// SQLite keeps (benchServer's estate, at a tenth of its size).
func TestStatusPageSQLite(t *testing.T) {
	srv := benchServer(t, 100)
	rec := benchGetTB(t, srv, "/?per_page=10")
	body := rec.Body.String()
	// Four errored (ws-0000 to ws-0003, the later the older), then two
	// forbidden, then drift.
	require.Equal(t, []string{"ws-0003-edge", "ws-0002-compute", "ws-0001-data", "ws-0000-network", "ws-0005-data", "ws-0004-network",
		"ws-0017-data", "ws-0016-network", "ws-0015-edge", "ws-0014-compute"}, rowNames(body))
	require.Contains(t, body, "Showing 1–10 of 100 workspaces")
	require.Contains(t, body, `<b>67</b> clean</a>`)
	require.Contains(t, body, `<b>5</b> unknown</a>`)
	require.Contains(t, body, `<span class="n-drift">6</span>`, "counts from the stored findings")
}

// A maintenance window over hundreds of workspaces does not list them
// all in the headline: the first pages.MaxHeldNames, then how many more.
func TestStatusPageHeldBounded(t *testing.T) {
	h := manyHarness(t, 120)
	h.setSilences(nil, []MaintenanceWindow{{Name: "everything", Workspaces: []string{"ws-*"}, Schedule: "0 2 * * 6",
		TimeZone: "UTC", Duration: 2 * time.Hour, Active: true, Ends: testNow.Add(time.Hour)}})
	ts := serve(t, h.options())
	_, _, body := get(t, ts.URL+"/")
	i := strings.Index(body, `<section class="remsum held" id="held">`)
	require.Positive(t, i)
	held := body[i : i+strings.Index(body[i:], "</section>")]
	require.Contains(t, held, "120 workspaces: checks go on")
	require.Equal(t, pages.MaxHeldNames, strings.Count(held, `<a href="/workspaces/`))
	require.Contains(t, held, " and 100 more</span>")
}
