package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/stats"
	"github.com/driftwatch/driftwatch/internal/store"
)

// memGroups is the group incidents in memory, read as the store reads
// them: the open ones or every one, most recently notified first.
type memGroups struct {
	mu sync.Mutex
	gs []store.GroupIncident
	// err, when set, fails every read.
	err error
}

func (m *memGroups) GroupIncidents(_ context.Context, all bool) ([]store.GroupIncident, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	var out []store.GroupIncident
	for _, g := range m.gs {
		if all || g.State == store.IncidentOpen {
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b store.GroupIncident) int {
		return cmp.Compare(b.NotifiedAt.UnixNano(), a.NotifiedAt.UnixNano())
	})
	return out, nil
}

func (m *memGroups) GroupIncident(_ context.Context, id string) (store.GroupIncident, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return store.GroupIncident{}, m.err
	}
	for _, g := range m.gs {
		if g.ID == id {
			return g, nil
		}
	}
	return store.GroupIncident{}, fmt.Errorf("group incident %q: %w", id, store.ErrNotFound)
}

// groupsFixture is one open group (two security groups of prod-network
// and one of prod-k8s whose ingress changed the same way) and one
// resolved group (billing-db and sandbox). Its findings carry everything
// a finding can carry besides its paths: none of it may leave the
// server.
func groupsFixture() *memGroups {
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	sg := func(ws, addr string) store.GroupMember {
		return store.GroupMember{Workspace: ws, Finding: drift.Finding{
			Kind: drift.KindDrift, Address: addr, Type: "aws_security_group", Action: "update", Attributes: []string{"ingress"},
			Detail: "CANARY-detail", Attribution: &drift.Attribution{Actor: "CANARY-actor"}, AttributionError: "CANARY-error",
		}}
	}
	return &memGroups{gs: []store.GroupIncident{
		{
			ID: "g-0123456789abcdef", Key: "dw-group-0123456789abcdef", Cause: "shape", CauseKey: "aws_security_group ingress list → list",
			Title: "aws_security_group: ingress changed on 3 resources in 2 workspaces", State: store.IncidentOpen,
			Members:    []store.GroupMember{sg("prod-k8s", "aws_security_group.nodes"), sg("prod-network", "aws_security_group.db"), sg("prod-network", "aws_security_group.web")},
			Workspaces: 2, FirstSeen: ago(3 * time.Hour), LastSeen: ago(2 * time.Hour), OpenedAt: ago(2 * time.Hour),
			NotifiedAt: ago(time.Hour), Severity: "high",
		},
		{
			ID: "g-fedcba9876543210", Key: "dw-group-fedcba9876543210", Cause: "commit", CauseKey: "4f1c2e9a0b7d",
			Title: "commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces", State: store.IncidentResolved,
			Members: []store.GroupMember{
				{Workspace: "billing-db", Finding: drift.Finding{Kind: drift.KindPending, Address: "aws_db_instance.main", Type: "aws_db_instance", Action: "update", Attributes: []string{"engine_version"}}},
				{Workspace: "sandbox", Finding: drift.Finding{Kind: drift.KindPending, Address: "aws_s3_bucket.scratch", Type: "aws_s3_bucket", Action: "create"}},
			},
			Workspaces: 2, FirstSeen: ago(50 * time.Hour), LastSeen: ago(49 * time.Hour), OpenedAt: ago(49 * time.Hour),
			NotifiedAt: ago(30 * time.Hour), ResolvedAt: ago(30 * time.Hour), Severity: "low",
		},
	}}
}

const openGroupJSON = `{
  "id": "g-0123456789abcdef", "cause": "shape", "cause_key": "aws_security_group ingress list → list",
  "title": "aws_security_group: ingress changed on 3 resources in 2 workspaces",
  "state": "open", "severity": "high", "workspaces": 2,
  "members": [
    {"workspace": "prod-k8s", "address": "aws_security_group.nodes", "type": "aws_security_group", "kind": "drift", "action": "update", "attributes": ["ingress"]},
    {"workspace": "prod-network", "address": "aws_security_group.db", "type": "aws_security_group", "kind": "drift", "action": "update", "attributes": ["ingress"]},
    {"workspace": "prod-network", "address": "aws_security_group.web", "type": "aws_security_group", "kind": "drift", "action": "update", "attributes": ["ingress"]}
  ],
  "first_seen": "2026-03-14T00:00:00Z", "last_seen": "2026-03-14T01:00:00Z", "opened_at": "2026-03-14T01:00:00Z",
  "notified_at": "2026-03-14T02:00:00Z"
}`

const resolvedGroupJSON = `{
  "id": "g-fedcba9876543210", "cause": "commit", "cause_key": "4f1c2e9a0b7d",
  "title": "commit 4f1c2e9a0b7d: pending changes on 2 resources in 2 workspaces",
  "state": "resolved", "severity": "low", "workspaces": 2,
  "members": [
    {"workspace": "billing-db", "address": "aws_db_instance.main", "type": "aws_db_instance", "kind": "pending", "action": "update", "attributes": ["engine_version"]},
    {"workspace": "sandbox", "address": "aws_s3_bucket.scratch", "type": "aws_s3_bucket", "kind": "pending", "action": "create", "attributes": []}
  ],
  "first_seen": "2026-03-12T01:00:00Z", "last_seen": "2026-03-12T02:00:00Z", "opened_at": "2026-03-12T02:00:00Z",
  "notified_at": "2026-03-12T21:00:00Z", "resolved_at": "2026-03-12T21:00:00Z"
}`

// withGroups serves the fixture with groupsFixture's group incidents.
func withGroups(t *testing.T) string {
	t.Helper()
	o := newHarness(t).options()
	o.Groups = groupsFixture()
	return serve(t, o).URL
}

func TestAPIGroups(t *testing.T) {
	base := withGroups(t)

	code, hdr, body := get(t, base+"/api/v1/groups")
	requireJSON(t, http.StatusOK, `{"groups": [`+openGroupJSON+`]}`, code, hdr, body)
	for _, all := range []string{"true", "1"} {
		code, hdr, body = get(t, base+"/api/v1/groups?all="+all)
		requireJSON(t, http.StatusOK, `{"groups": [`+openGroupJSON+`, `+resolvedGroupJSON+`]}`, code, hdr, body)
		require.NotContains(t, body, "CANARY", "a member is its paths, never a finding's other parts")
	}
	code, hdr, body = get(t, base+"/api/v1/groups?all=false")
	requireJSON(t, http.StatusOK, `{"groups": [`+openGroupJSON+`]}`, code, hdr, body)

	code, hdr, body = get(t, base+"/api/v1/groups/g-fedcba9876543210")
	requireJSON(t, http.StatusOK, resolvedGroupJSON, code, hdr, body)
	code, hdr, body = get(t, base+"/api/v1/groups/g-0123456789abcdef")
	requireJSON(t, http.StatusOK, openGroupJSON, code, hdr, body)
	require.NotContains(t, body, "CANARY")

	code, hdr, body = get(t, base+"/api/v1/groups/g-nope")
	requireJSON(t, http.StatusNotFound, `{"error": "unknown group"}`, code, hdr, body)
	for _, q := range []string{"all=maybe", "all=true&all=false"} {
		code, hdr, body = get(t, base+"/api/v1/groups?"+q)
		requireJSON(t, http.StatusBadRequest, `{"error": "query parameter all: want true or false, once"}`, code, hdr, body)
	}
}

// A daemon that keeps no group incidents: an empty list, every group
// unknown, and no Groups section.
func TestAPIGroupsNone(t *testing.T) {
	base := serve(t, newHarness(t).options()).URL
	code, hdr, body := get(t, base+"/api/v1/groups?all=true")
	requireJSON(t, http.StatusOK, `{"groups": []}`, code, hdr, body)
	code, hdr, body = get(t, base+"/api/v1/groups/g-0123456789abcdef")
	requireJSON(t, http.StatusNotFound, `{"error": "unknown group"}`, code, hdr, body)
	_, _, body = get(t, base+"/")
	require.NotContains(t, body, `id="groups"`)
	code, _, body = get(t, base+"/groups/g-0123456789abcdef")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "<h1>Unknown group</h1>")
}

// A store that fails: 500 without details, the error logged.
func TestGroupsStoreError(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.Groups = &memGroups{err: errors.New("database is locked")}
	base := serve(t, o).URL
	for _, path := range []string{"/api/v1/groups", "/api/v1/groups/g-1", "/", "/groups/g-1", "/workspaces/prod-network"} {
		code, _, body := get(t, base+path)
		require.Equal(t, http.StatusInternalServerError, code, path)
		require.NotContains(t, body, "database is locked", path)
	}
	require.Contains(t, h.logs.String(), "database is locked")
}

// The groups are a viewer's reads: refused without a credential when
// reads are closed, served to the read token.
func TestAPIGroupsNeedAReader(t *testing.T) {
	_, _, o := roleOptions(t)
	o.Groups = groupsFixture()
	base := serve(t, o).URL
	for _, path := range []string{"/api/v1/groups", "/api/v1/groups/g-0123456789abcdef", "/groups/g-0123456789abcdef"} {
		code, _, _ := do(t, http.MethodGet, base+path, nil)
		require.Equal(t, http.StatusUnauthorized, code, path)
		code, _, body := do(t, http.MethodGet, base+path, bearerAuth(roleTokens["viewer"]))
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	}
}

func TestGroupPages(t *testing.T) {
	base := withGroups(t)

	// The status page: the open group, linked, with its counts.
	_, _, body := get(t, base+"/")
	body = withoutStyle(body)
	require.Contains(t, body, `<h2 class="section" id="groups">Groups`)
	require.Contains(t, body, `<tr class="s-row-drift" id="group-g-0123456789abcdef">
  <td class="name"><a href="/groups/g-0123456789abcdef">aws_security_group: ingress changed on 3 resources in 2 workspaces</a> <span class="sev sev-high">high</span></td>
  <td class="num">3</td>
  <td class="num">2</td>
  <td class="nowrap"><time datetime="2026-03-14T01:00:00Z" title="2026-03-14 01:00:00 UTC">2h ago</time></td>`)
	require.NotContains(t, body, "g-fedcba9876543210", "a resolved group is not on the status page")
	require.Less(t, strings.Index(body, `id="groups"`), strings.Index(body, `id="ws-billing-db"`), "above the workspaces")

	// The group's page: cause, times, members linking to their
	// workspaces.
	code, _, body := get(t, base+"/groups/g-0123456789abcdef")
	body = withoutStyle(body)
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`<title>driftwatch: group g-0123456789abcdef (open)</title>`,
		`<meta http-equiv="refresh" content="30">`,
		`<h1>aws_security_group: ingress changed on 3 resources in 2 workspaces <span class="badge s-open">open</span></h1>`,
		`<dd>shape: <code>aws_security_group ingress list → list</code></dd>`,
		`<dd>3 resources in 2 workspaces</dd>`,
		`<div><dt>Opened</dt><dd><time datetime="2026-03-14T01:00:00Z" title="2026-03-14 01:00:00 UTC">2h ago</time></dd></div>`,
		`<td class="name"><a href="/workspaces/prod-k8s">prod-k8s</a></td>`,
		`<td class="addr mono">aws_security_group.web</td>`,
		`<code>ingress</code>`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "Resolved")
	require.NotContains(t, body, "CANARY")
	_, _, body = get(t, base+"/groups/g-fedcba9876543210")
	require.Contains(t, body, `<span class="badge s-resolved">resolved</span>`)
	require.Contains(t, body, `<div><dt>Resolved</dt><dd><time datetime="2026-03-12T21:00:00Z"`)
	require.NotContains(t, body, `http-equiv="refresh"`, "a resolved group changes no more")

	code, _, body = get(t, base+"/groups/g-nope")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "No group incident with this id is kept.")

	// A workspace's page names the open groups holding its findings.
	_, _, body = get(t, base+"/workspaces/prod-network")
	require.Contains(t, body, `<p class="note group" id="group-g-0123456789abcdef">2 of its findings are part of group <a href="/groups/g-0123456789abcdef">aws_security_group: ingress changed on 3 resources in 2 workspaces</a>`)
	_, _, body = get(t, base+"/workspaces/prod-k8s")
	require.Contains(t, body, `One of its findings is part of group <a href="/groups/g-0123456789abcdef">`)
	for _, ws := range []string{"staging-web", "billing-db"} { // none; a resolved one
		_, _, body = get(t, base+"/workspaces/"+ws)
		require.NotContains(t, body, "part of group", ws)
	}
}

// A group's title, key, workspaces and addresses come from the fleet's
// code: escaped everywhere they are shown.
func TestGroupPagesEscape(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	h := newHarness(t)
	h.setWorkspaces(append(h.Workspaces(), WorkspaceInfo{Name: evil}))
	o := h.options()
	o.Groups = &memGroups{gs: []store.GroupIncident{{
		ID: "g-evil", Cause: "shape", CauseKey: evil, Title: evil + " changed", State: store.IncidentOpen, Severity: evil, Workspaces: 2,
		Members: []store.GroupMember{
			{Workspace: evil, Finding: drift.Finding{Kind: drift.KindDrift, Address: `aws_instance.x["` + evil + `"]`, Type: evil, Action: "update", Attributes: []string{"tags." + evil}}},
			{Workspace: "prod-network", Finding: drift.Finding{Kind: drift.KindDrift, Address: `aws_instance.y["` + evil + `"]`}},
		},
		OpenedAt: testNow,
	}}}
	base := serve(t, o).URL
	for _, path := range []string{"/", "/groups/g-evil", "/workspaces/prod-network"} {
		code, _, body := get(t, base+path)
		require.Equal(t, http.StatusOK, code, path)
		require.NotContains(t, strings.ToLower(body), "<script", path)
		require.Contains(t, body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; changed`, path)
	}
	_, _, body := get(t, base+"/groups/g-evil")
	require.Contains(t, body, `<td class="addr mono">aws_instance.x[&#34;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#34;]</td>`)
	require.Contains(t, body, `href="/workspaces/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E"`)
}

// Trends count the group incidents opened per day, from every group
// incident kept (resolved ones too); a label or owner filter counts
// those holding a finding of a workspace it selects.
func TestStatsGroupIncidents(t *testing.T) {
	o := trendsHarness(t)
	day := func(s string) time.Time {
		at, err := time.Parse("2006-01-02 15:04", s)
		require.NoError(t, err)
		return at
	}
	member := func(ws string) []store.GroupMember {
		return []store.GroupMember{{Workspace: ws, Finding: drift.Finding{Kind: drift.KindDrift, Address: "aws_s3_bucket.b"}}}
	}
	o.Groups = &memGroups{gs: []store.GroupIncident{
		{ID: "g-1", State: store.IncidentResolved, OpenedAt: day("2026-03-12 12:05"), Members: member("prod-network")},
		{ID: "g-2", State: store.IncidentOpen, OpenedAt: day("2026-03-14 02:00"), Members: member("staging-web")},
		{ID: "g-3", State: store.IncidentOpen, OpenedAt: day("2026-03-14 02:30"), Members: member("billing-db")},
		{ID: "g-old", State: store.IncidentResolved, OpenedAt: day("2026-02-01 00:00"), Members: member("prod-network")},
	}}
	base := serve(t, o).URL
	var rep struct{ stats.Report }
	perDay := func() []int {
		var out []int
		for _, d := range rep.Days {
			out = append(out, d.GroupIncidentsOpened)
		}
		return out
	}
	code, _, body := get(t, base+"/api/v1/stats?since=3d")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.Equal(t, []int{1, 0, 2}, perDay())
	require.Equal(t, 3, rep.Totals.GroupIncidentsOpened)
	require.Equal(t, 2, rep.Totals.IncidentsOpened, "the drift and the error incidents: group incidents are not in incidents_opened")

	_, _, body = get(t, base+"/api/v1/stats?since=3d&label=env%3Dprod")
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.Equal(t, []int{1, 0, 1}, perDay(), "prod-network's and billing-db's")

	_, _, body = get(t, base+"/trends?since=3d")
	require.Contains(t, body, `<span class="chip"><b>3</b> group incidents opened</span>`)
	i := strings.Index(body, `<caption>Incidents opened and resolved`)
	require.Positive(t, i)
	table := body[i : i+strings.Index(body[i:], "</table>")]
	require.Contains(t, table, `<th scope="col">group incidents opened</th>`)
	require.Contains(t, table, `<tr><th scope="row">2026-03-14</th><td>0</td><td>1</td><td>2</td></tr>`)
}
