package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/pages"
	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
	"github.com/driftwatch/driftwatch/internal/store/sqlite"
)

// trendsStore is a real store with three days of history before testNow
// (2026-03-14 03:00 UTC):
//
//   - prod-network (env=prod, team-net): clean 03-12 10:00, drift (a
//     security group) 03-12 12:00, clean 03-13 09:00; every run takes a
//     minute, so drift is detected 2 h (7200 s) after the clean run and
//     resolved 21 h (75600 s) after detection;
//   - staging-web (env=staging, team-web): errored 03-13 08:00, clean
//     03-14 01:00.
func trendsStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "driftwatch.db"), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	add := func(id, ws, start string, status drift.Status, fs ...drift.Finding) {
		at, err := time.Parse("2006-01-02 15:04", start)
		require.NoError(t, err)
		require.NoError(t, st.StartRun(t.Context(), store.Run{ID: id, Workspace: ws, Trigger: "schedule", StartedAt: at}))
		_, _, err = st.FinishRun(t.Context(), store.Run{ID: id, FinishedAt: at.Add(time.Minute), Status: status, Findings: fs})
		require.NoError(t, err)
	}
	sg := drift.Finding{Kind: drift.KindDrift, Address: "aws_security_group.web", Type: "aws_security_group", Action: "update"}
	add("n1", "prod-network", "2026-03-12 10:00", drift.StatusClean)
	add("n2", "prod-network", "2026-03-12 12:00", drift.StatusDrift, sg)
	add("n3", "prod-network", "2026-03-13 09:00", drift.StatusClean)
	add("w1", "staging-web", "2026-03-13 08:00", drift.StatusErrored)
	add("w2", "staging-web", "2026-03-14 01:00", drift.StatusClean)
	return st
}

func trendsHarness(t *testing.T) Options {
	t.Helper()
	h := newHarness(t)
	h.setWorkspaces([]WorkspaceInfo{
		{Name: "prod-network", Owner: "team-net", Labels: map[string]string{"env": "prod", "tier": "network"}},
		{Name: "staging-web", Owner: "team-web", Labels: map[string]string{"env": "staging"}},
		{Name: "billing-db", Owner: "team-net", Labels: map[string]string{"env": "prod"}},
	})
	o := h.options()
	o.Store = trendsStore(t)
	return o
}

// The API answers the documented shape: every day of the window, in
// order, zeros and nulls where nothing happened, units in the names.
func TestAPIStats(t *testing.T) {
	base := serve(t, trendsHarness(t)).URL
	code, h, body := get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod")
	requireJSON(t, http.StatusOK, `{
  "filter": {"since": "3d", "labels": {"env": "prod"}, "owner": "", "matched_workspaces": 2},
  "since": "2026-03-12T00:00:00Z",
  "until": "2026-03-14T03:00:00Z",
  "days": [
    {"date": "2026-03-12", "workspaces_checked": 1, "workspaces_drifted": 1, "workspaces_forbidden": 0, "workspaces_errored": 0,
     "incidents_opened": 1, "incidents_resolved": 0, "drift_incidents_opened": 1, "drift_incidents_resolved": 0,
     "error_incidents_opened": 0, "error_incidents_resolved": 0, "group_incidents_opened": 0,
     "mean_time_to_detect_seconds": 7200, "p90_time_to_detect_seconds": 7200,
     "mean_time_to_resolve_seconds": null, "p90_time_to_resolve_seconds": null,
     "runs": 2, "runs_errored": 0, "error_rate": 0, "p50_run_duration_seconds": 60, "p95_run_duration_seconds": 60},
    {"date": "2026-03-13", "workspaces_checked": 1, "workspaces_drifted": 0, "workspaces_forbidden": 0, "workspaces_errored": 0,
     "incidents_opened": 0, "incidents_resolved": 1, "drift_incidents_opened": 0, "drift_incidents_resolved": 1,
     "error_incidents_opened": 0, "error_incidents_resolved": 0, "group_incidents_opened": 0,
     "mean_time_to_detect_seconds": null, "p90_time_to_detect_seconds": null,
     "mean_time_to_resolve_seconds": 75600, "p90_time_to_resolve_seconds": 75600,
     "runs": 1, "runs_errored": 0, "error_rate": 0, "p50_run_duration_seconds": 60, "p95_run_duration_seconds": 60},
    {"date": "2026-03-14", "workspaces_checked": 0, "workspaces_drifted": 0, "workspaces_forbidden": 0, "workspaces_errored": 0,
     "incidents_opened": 0, "incidents_resolved": 0, "drift_incidents_opened": 0, "drift_incidents_resolved": 0,
     "error_incidents_opened": 0, "error_incidents_resolved": 0, "group_incidents_opened": 0,
     "mean_time_to_detect_seconds": null, "p90_time_to_detect_seconds": null,
     "mean_time_to_resolve_seconds": null, "p90_time_to_resolve_seconds": null,
     "runs": 0, "runs_errored": 0, "error_rate": 0, "p50_run_duration_seconds": null, "p95_run_duration_seconds": null}
  ],
  "totals": {"workspaces": 1, "workspaces_drifted": 1, "workspaces_forbidden": 0, "workspaces_errored": 0,
    "drift_incidents_open_at_end": 0,
    "incidents_opened": 1, "incidents_resolved": 1, "drift_incidents_opened": 1, "drift_incidents_resolved": 1,
    "error_incidents_opened": 0, "error_incidents_resolved": 0, "group_incidents_opened": 0,
    "mean_time_to_detect_seconds": 7200, "p90_time_to_detect_seconds": 7200,
    "mean_time_to_resolve_seconds": 75600, "p90_time_to_resolve_seconds": 75600,
    "runs": 3, "runs_errored": 0, "error_rate": 0, "p50_run_duration_seconds": 60, "p95_run_duration_seconds": 60},
  "top_workspaces": [{"workspace": "prod-network", "days_drifted": 1, "days_forbidden": 0, "days_errored": 0, "drift_incidents_opened": 1}],
  "top_resource_types": [{"resource_type": "aws_security_group", "workspace_days": 1, "workspaces": 1}]
}`, code, h, body)

	// Without a filter: every workspace with history, the error too.
	var all struct {
		Filter struct {
			Since             string
			MatchedWorkspaces *int `json:"matched_workspaces"`
		}
		stats.Report
	}
	code, _, body = get(t, base+"/api/v1/stats?since=2d")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &all))
	require.Nil(t, all.Filter.MatchedWorkspaces)
	require.Equal(t, []string{"2026-03-13", "2026-03-14"}, []string{all.Days[0].Date, all.Days[1].Date})
	require.Equal(t, 1, all.Days[0].WorkspacesErrored)
	require.Equal(t, 1, all.Days[1].ErrorIncidentsResolved)
	require.Equal(t, 2, all.Totals.Workspaces)
	require.InDelta(t, 1.0/3, all.Totals.ErrorRate, 1e-12) // 1 of the 3 runs since 03-13

	// By owner; an owner nobody has: every day, all zero.
	_, _, body = get(t, base+"/api/v1/stats?since=3d&owner=team-web")
	require.NoError(t, json.Unmarshal([]byte(body), &all))
	require.Equal(t, 1, *all.Filter.MatchedWorkspaces)
	require.Equal(t, 2, all.Totals.Runs.Runs)
	code, _, body = get(t, base+"/api/v1/stats?owner=nobody")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal([]byte(body), &all))
	require.Len(t, all.Days, 30)
	require.Equal(t, 0, all.Totals.Runs.Runs)
	require.Equal(t, "30d", all.Filter.Since)

	// Labels are ANDed.
	_, _, body = get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod&label=tier%3Dnetwork")
	require.NoError(t, json.Unmarshal([]byte(body), &all))
	require.Equal(t, 1, *all.Filter.MatchedWorkspaces)
}

func TestAPIStatsBadRequest(t *testing.T) {
	base := serve(t, trendsHarness(t)).URL
	for _, tc := range []struct{ query, want string }{
		{"since=401d", `query parameter since: \"401d\" is too long: at most 400d`},
		{"since=2w", `query parameter since: \"2w\" is not a duration: want a number of days or hours such as 30d or 12h`},
		{"since=1d&since=2d", `query parameter since: given 2 times, at most once`},
		{"label=env", `query parameter label: \"env\" is not key=value`},
		{"label=%3Dprod", `query parameter label: \"=prod\" is not key=value`},
		{"owner=", `query parameter owner: empty; leave it out for every owner`},
		{"lable=env%3Dprod", `unknown query parameter \"lable\": want since, label or owner`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, h, body := get(t, base+"/api/v1/stats?"+tc.query)
			requireJSON(t, http.StatusBadRequest, `{"error": "`+tc.want+`"}`, code, h, body)
		})
	}
	code, _, body := get(t, base+"/trends?since=0d")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `query parameter since: &#34;0d&#34; is not a duration`)
}

// A store without run history for statistics: 501, saying why.
func TestStatsUnsupported(t *testing.T) {
	base := serve(t, newHarness(t).options()).URL
	code, h, body := get(t, base+"/api/v1/stats")
	requireJSON(t, http.StatusNotImplemented,
		`{"error": "trends are not available: this driftwatch's store cannot read run history for statistics"}`, code, h, body)
	code, _, body = get(t, base+"/trends")
	require.Equal(t, http.StatusNotImplemented, code)
	require.Contains(t, body, "<h1>Trends unavailable</h1>")
}

// The Trends page works without script and under the pages' CSP: no
// script, no style attribute; every chart is an SVG image with a title
// and a description, and has a table with the same numbers.
func TestTrendsPage(t *testing.T) {
	base := serve(t, trendsHarness(t)).URL
	code, h, body := get(t, base+"/trends?since=3d&label=env%3Dprod")
	require.Equal(t, http.StatusOK, code, body)
	csp := h.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.NotContains(t, strings.ToLower(body), "<script")
	require.NotRegexp(t, `\sstyle=`, body)
	require.NotRegexp(t, `\son[a-z]+=`, body)

	svgs := regexp.MustCompile(`<svg class="chart" viewBox="0 0 960 220" role="img" aria-labelledby="(chart-[a-z]+)-title chart-[a-z]+-desc"`).FindAllStringSubmatch(body, -1)
	require.Len(t, svgs, 6)
	tables := strings.Count(body, `<table class="visually-hidden">`)
	require.Equal(t, 6, tables)
	for _, m := range svgs {
		require.Contains(t, body, `<title id="`+m[1]+`-title">`)
		require.Contains(t, body, `<desc id="`+m[1]+`-desc">Daily `)
	}
	// The workspaces chart's table: a row per day, drifted/forbidden/errored.
	i := strings.Index(body, `<caption>Workspaces with drift`)
	require.Positive(t, i)
	table := body[i : i+strings.Index(body[i:], "</table>")]
	require.Contains(t, table, `<tr><th scope="row">2026-03-12</th><td>1</td><td>0</td><td>0</td></tr>`)
	require.Contains(t, table, `<tr><th scope="row">2026-03-14</th><td>0</td><td>0</td><td>0</td></tr>`)
	// Time to detect in hours: 7200 s is 2; the other days have none.
	i = strings.Index(body, `<caption>Time to detect`)
	table = body[i : i+strings.Index(body[i:], "</table>")]
	require.Contains(t, table, `(hours; — is a day without a value)`)
	require.Contains(t, table, `<tr><th scope="row">2026-03-12</th><td>2</td><td>2</td></tr>`)
	require.Contains(t, table, `<tr><th scope="row">2026-03-13</th><td>—</td><td>—</td></tr>`)

	// Top lists link to the workspace; filters are links that keep the
	// other choices, the current ones marked.
	require.Contains(t, body, `<td class="name"><a href="/workspaces/prod-network">prod-network</a></td><td class="num">1</td>`)
	require.Contains(t, body, `<td><code>aws_security_group</code></td><td class="num">1</td><td class="num">1</td>`)
	require.Contains(t, body, `<strong class="chip current" aria-current="true">prod</strong>`)
	require.Contains(t, body, `<a class="chip" href="/trends?label=env%3Dstaging&amp;since=3d">staging</a>`)
	require.Contains(t, body, `<a class="chip" href="/trends?label=env%3Dprod&amp;owner=team-web&amp;since=3d">team-web</a>`)
	require.Contains(t, body, `<a class="chip" href="/trends?label=env%3Dprod&amp;since=7d">7d</a>`)
	require.Contains(t, body, `<a class="chip" href="/trends?since=3d" title="Remove this filter">env=prod ✕</a>`)
	require.Contains(t, body, `2 workspaces · <a href="/trends?since=3d">clear filters</a>`)
	require.Contains(t, body, `<a href="/api/v1/stats?label=env%3Dprod&amp;since=3d">`)
}

func TestTrendsLabelChoicesBounded(t *testing.T) {
	o := trendsHarness(t)
	h := o.Control.(*harness)
	var ws []WorkspaceInfo
	for i := range pages.MaxLabelChoices + 1 {
		ws = append(ws, WorkspaceInfo{Name: "w" + string(rune('a'+i)), Labels: map[string]string{"repo": "r" + string(rune('a'+i)), "env": "prod"}})
	}
	h.setWorkspaces(ws)
	base := serve(t, o).URL
	_, _, body := get(t, base+"/trends")
	require.Contains(t, body, `<span class="filter-name">env</span>`)
	require.NotContains(t, body, `<span class="filter-name">repo</span>`, "too many values to list")
	// Still usable in the URL.
	code, _, _ := get(t, base+"/trends?"+url.Values{"label": {"repo=ra"}}.Encode())
	require.Equal(t, http.StatusOK, code)
}

// A scan (config scans:) beside the workspaces: its runs count in the
// Scans figures only, the workspace figures are those without it, and the
// page shows a Scans section (a page without scans shows none).
func TestTrendsScans(t *testing.T) {
	without := serve(t, trendsHarness(t)).URL
	_, _, plain := get(t, without+"/api/v1/stats?since=3d")
	_, _, page := get(t, without+"/trends?since=3d")
	require.NotContains(t, plain, `"top_scans"`)
	require.NotContains(t, plain, `"scans"`)
	require.NotContains(t, page, `id="scans"`)

	o := trendsHarness(t)
	h := o.Control.(*harness)
	h.setWorkspaces(append(h.Workspaces(), WorkspaceInfo{Name: "buckets", Scan: true}))
	st := o.Store.(*sqlite.Store)
	scanRun := func(id, start string, status drift.Status, fs ...drift.Finding) {
		at, err := time.Parse("2006-01-02 15:04", start)
		require.NoError(t, err)
		require.NoError(t, st.StartRun(t.Context(), store.Run{ID: id, Workspace: "buckets", Trigger: "schedule", StartedAt: at}))
		_, _, err = st.FinishRun(t.Context(), store.Run{ID: id, FinishedAt: at.Add(time.Minute), Status: status, Findings: fs})
		require.NoError(t, err)
	}
	unmanaged := func(name string) drift.Finding {
		return drift.Finding{Kind: drift.KindUnmanaged, Address: `aws_s3_bucket[bucket="` + name + `"]`, Type: "aws_s3_bucket", Action: "none"}
	}
	twice := drift.Finding{Kind: drift.KindManagedTwice, Address: `aws_s3_bucket[bucket="shared"]`, Type: "aws_s3_bucket", Action: "none",
		ManagedBy: []string{"prod-network: aws_s3_bucket.shared", "staging-web: aws_s3_bucket.shared"}}
	scanRun("s1", "2026-03-12 06:00", drift.StatusDrift, unmanaged("a"), unmanaged("b"), unmanaged("c"), twice)
	scanRun("s2", "2026-03-13 06:00", drift.StatusDrift, unmanaged("a"))
	base := serve(t, o).URL

	var rep stats.Report
	code, _, body := get(t, base+"/api/v1/stats?since=3d")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	var before stats.Report
	require.NoError(t, json.Unmarshal([]byte(plain), &before))
	require.Equal(t, before.Totals.Workspaces, rep.Totals.Workspaces, "a scan is not a workspace checked")
	require.Equal(t, before.Totals.WorkspacesDrifted, rep.Totals.WorkspacesDrifted, "nor a drifted one")
	require.Equal(t, before.Totals.Incidents, rep.Totals.Incidents, "nor are its incidents drift incidents")
	require.Equal(t, before.TopWorkspaces, rep.TopWorkspaces)
	require.Equal(t, &stats.ScanFigures{Checked: 1, Found: stats.Found{Unmanaged: 1}}, rep.Totals.Scans)
	require.Equal(t, &stats.ScanFigures{Checked: 1, Found: stats.Found{Unmanaged: 3, ManagedTwice: 1}}, rep.Days[0].Scans)
	require.Equal(t, &stats.ScanFigures{}, rep.Days[2].Scans)
	require.Equal(t, []stats.ScanCount{{Scan: "buckets", Runs: 2, Found: stats.Found{Unmanaged: 1}, PeakUnmanaged: 3, PeakManagedTwice: 1}},
		rep.TopScans)
	require.Equal(t, []stats.ScanTypeCount{{Type: "aws_s3_bucket", ScanDays: 2, Scans: 1}}, rep.TopUnmanagedTypes)

	code, _, page = get(t, base+"/trends?since=3d")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, `<h2 id="scans">Scans`)
	require.Contains(t, page, `<b>1</b> unmanaged`)
	require.Equal(t, 7, strings.Count(page, `<table class="visually-hidden">`), "the six charts and the scans'")
	i := strings.Index(page, `<caption>Resources scans found`)
	require.Positive(t, i)
	table := page[i : i+strings.Index(page[i:], "</table>")]
	require.Contains(t, table, `<tr><th scope="row">2026-03-12</th><td>3</td><td>1</td></tr>`)
	require.Contains(t, table, `<tr><th scope="row">2026-03-13</th><td>1</td><td>0</td></tr>`)
	require.Contains(t, page, `<td class="name"><a href="/workspaces/buckets">buckets</a></td><td class="num">1</td><td class="num">0</td><td class="num">3</td>`)
	require.Contains(t, page, `<td><code>aws_s3_bucket</code></td><td class="num">2</td><td class="num">1</td>`)
	i = strings.Index(page, `id="top-workspaces"`)
	require.Positive(t, i)
	require.NotContains(t, page[i:i+strings.Index(page[i:], `id="top-types"`)], "buckets", "the scan is not among the workspaces that drift most")
}
