package view

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// testNow is the fixed clock of the tests.
var testNow = time.Date(2026, 3, 14, 3, 0, 0, 0, time.UTC)

func TestParseListQuery(t *testing.T) {
	tests := []struct {
		name, query string
		want        ListQuery
		wantErr     string
	}{
		{name: "defaults", query: "",
			want: ListQuery{Sort: SortSeverity, Page: 1, PerPage: DefaultPerPage}},
		{name: "every parameter", query: "status=drift&status=errored&status=drift&label=env%3Dprod&label=tier%3D&owner=team-net&q=+Net+&sort=name&page=3&per_page=500",
			want: ListQuery{
				Statuses: []drift.Status{drift.StatusErrored, drift.StatusDrift}, // severity order, once each
				Labels:   LabelList{{"env", "prod"}, {"tier", ""}},
				Owner:    "team-net", Q: "Net", Sort: SortName, Page: 3, PerPage: MaxPerPage, Given: true,
			}},
		{name: "a label value may hold =", query: "label=a%3Db%3Dc",
			want: ListQuery{Labels: LabelList{{"a", "b=c"}}, Sort: SortSeverity, Page: 1, PerPage: DefaultPerPage, Given: true}},
		{name: "an empty search box is no filter", query: "q=",
			want: ListQuery{Sort: SortSeverity, Page: 1, PerPage: DefaultPerPage, Given: true}},
		{name: "unknown status", query: "status=drifted",
			wantErr: `query parameter status: "drifted" is not a status: want errored, forbidden, drift, validation, pending, clean, unknown`},
		{name: "running is a run's status, not a workspace's", query: "status=running",
			wantErr: `query parameter status: "running" is not a status`},
		{name: "label without =", query: "label=env",
			wantErr: `query parameter label: "env" is not key=value`},
		{name: "label without key", query: "label=%3Dprod",
			wantErr: `query parameter label: "=prod" is not key=value`},
		{name: "empty owner", query: "owner=",
			wantErr: "query parameter owner: empty; leave it out for every owner"},
		{name: "owner twice", query: "owner=a&owner=b",
			wantErr: "query parameter owner: given 2 times, at most once"},
		{name: "q too long", query: "q=" + strings.Repeat("x", maxQueryLen+1),
			wantErr: "query parameter q: longer than 200 bytes"},
		{name: "sort", query: "sort=age",
			wantErr: `query parameter sort: "age": want severity or name`},
		{name: "page zero", query: "page=0",
			wantErr: `query parameter page: "0" is not a positive integer`},
		{name: "page not a number", query: "page=two",
			wantErr: `query parameter page: "two" is not a positive integer`},
		{name: "per_page too large", query: "per_page=501",
			wantErr: "query parameter per_page: 501 is more than 500"},
		{name: "per_page negative", query: "per_page=-5",
			wantErr: `query parameter per_page: "-5" is not a positive integer`},
		{name: "misspelt parameter", query: "stauts=drift",
			wantErr: `unknown query parameter "stauts": want status, label, owner, q, sort, page or per_page`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			got, err := ParseListQuery(q)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// listSet is a constructed list: two owners, env and tier labels,
// statuses with ties in severity (to order by age) and in age (to order
// by name).
func listSet() []WorkspaceView {
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	v := func(name string, st drift.Status, since time.Time, owner string, labels map[string]string) WorkspaceView {
		w := WorkspaceView{WorkspaceInfo: control.WorkspaceInfo{Name: name, Owner: owner, Labels: labels}, Status: st}
		if st != StatusUnknown {
			w.State = store.WorkspaceState{Workspace: name, Status: st, Since: since}
		}
		return w
	}
	prod := map[string]string{"env": "prod"}
	prodNet := map[string]string{"env": "prod", "tier": "Network"}
	stg := map[string]string{"env": "staging"}
	return []WorkspaceView{
		v("clean-a", drift.StatusClean, ago(48*time.Hour), "team-a", stg),
		v("drift-new", drift.StatusDrift, ago(time.Hour), "team-a", prod),
		v("drift-old", drift.StatusDrift, ago(72*time.Hour), "team-b", prodNet),
		v("drift-tie-b", drift.StatusDrift, ago(5*time.Hour), "team-b", prod),
		v("drift-tie-a", drift.StatusDrift, ago(5*time.Hour), "team-a", stg),
		v("drift-no-since", drift.StatusDrift, time.Time{}, "team-a", prod),
		v("errored-x", drift.StatusErrored, ago(10*time.Minute), "team-b", prodNet),
		v("never-ran", StatusUnknown, time.Time{}, "", nil),
		v("pending-p", drift.StatusPending, ago(2*time.Hour), "team-a", stg),
		v("forbidden-f", drift.StatusForbidden, ago(3*time.Hour), "team-b", prod),
	}
}

func names(vs []WorkspaceView) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestWorkspaceListFilterAndOrder(t *testing.T) {
	all := listSet()
	tests := []struct {
		name     string
		f        ListQuery
		want     []string
		byStatus map[drift.Status]int // nil: not checked
	}{
		{name: "severity, then longest in it, then name; unknown since and status last",
			want: []string{"errored-x", "forbidden-f", "drift-old", "drift-tie-a", "drift-tie-b", "drift-new", "drift-no-since", "pending-p", "clean-a", "never-ran"},
			byStatus: map[drift.Status]int{drift.StatusErrored: 1, drift.StatusForbidden: 1, drift.StatusDrift: 5,
				drift.StatusPending: 1, drift.StatusClean: 1, StatusUnknown: 1}},
		{name: "by name", f: ListQuery{Sort: SortName},
			want: []string{"clean-a", "drift-new", "drift-no-since", "drift-old", "drift-tie-a", "drift-tie-b", "errored-x", "forbidden-f", "never-ran", "pending-p"}},
		{name: "one status", f: ListQuery{Statuses: []drift.Status{drift.StatusDrift}},
			want: []string{"drift-old", "drift-tie-a", "drift-tie-b", "drift-new", "drift-no-since"},
			// The counts ignore the status filter: what each status would show.
			byStatus: map[drift.Status]int{drift.StatusErrored: 1, drift.StatusForbidden: 1, drift.StatusDrift: 5,
				drift.StatusPending: 1, drift.StatusClean: 1, StatusUnknown: 1}},
		{name: "statuses are any of", f: ListQuery{Statuses: []drift.Status{drift.StatusErrored, StatusUnknown}},
			want: []string{"errored-x", "never-ran"}},
		{name: "labels are all of", f: ListQuery{Labels: LabelList{{"env", "prod"}, {"tier", "Network"}}},
			want:     []string{"errored-x", "drift-old"},
			byStatus: map[drift.Status]int{drift.StatusErrored: 1, drift.StatusDrift: 1}},
		{name: "a label value matches exactly", f: ListQuery{Labels: LabelList{{"tier", "network"}}}},
		{name: "an empty label value is not a missing label", f: ListQuery{Labels: LabelList{{"tier", ""}}}},
		{name: "owner", f: ListQuery{Owner: "team-b"},
			want: []string{"errored-x", "forbidden-f", "drift-old", "drift-tie-b"}},
		{name: "text in a name, any case", f: ListQuery{Q: "TIE-"},
			want: []string{"drift-tie-a", "drift-tie-b"}},
		{name: "text in an owner", f: ListQuery{Q: "m-b"},
			want: []string{"errored-x", "forbidden-f", "drift-old", "drift-tie-b"}},
		{name: "text in a label, as key=value", f: ListQuery{Q: "tier=net"},
			want: []string{"errored-x", "drift-old"}},
		{name: "text across key and value", f: ListQuery{Q: "v=stag"},
			want: []string{"drift-tie-a", "pending-p", "clean-a"}},
		{name: "everything at once", f: ListQuery{Statuses: []drift.Status{drift.StatusDrift, drift.StatusPending}, Labels: LabelList{{"env", "staging"}}, Owner: "team-a", Q: "-"},
			want:     []string{"drift-tie-a", "pending-p"},
			byStatus: map[drift.Status]int{drift.StatusDrift: 1, drift.StatusPending: 1, drift.StatusClean: 1}},
		{name: "nothing matches", f: ListQuery{Q: "nope"}, byStatus: map[drift.Status]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Page, tt.f.PerPage = 1, MaxPerPage
			res := ListWorkspaces(all, tt.f)
			require.Equal(t, tt.want, nilIfEmpty(names(res.Items)))
			require.Equal(t, len(tt.want), res.Total)
			if tt.byStatus != nil {
				require.Equal(t, tt.byStatus, res.ByStatus)
			}
		})
	}
	require.Equal(t, names(listSet()), names(all), "the list is not reordered in place")
}

func nilIfEmpty(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}

func TestWorkspaceListPages(t *testing.T) {
	all := listSet() // 10 workspaces
	order := names(ListWorkspaces(all, ListQuery{Page: 1, PerPage: 10}).Items)
	tests := []struct {
		page, per  int
		want       []string
		wantPages  int
		wantEmpty  bool
		wantFromTo [2]int
	}{
		{page: 1, per: 4, want: order[0:4], wantPages: 3},
		{page: 2, per: 4, want: order[4:8], wantPages: 3},
		{page: 3, per: 4, want: order[8:10], wantPages: 3}, // the last page is short
		{page: 4, per: 4, wantPages: 3, wantEmpty: true},   // past the end
		{page: 1, per: 10, want: order, wantPages: 1},
		{page: 2, per: 5, want: order[5:], wantPages: 2}, // the last page is full
		{page: 1, per: 500, want: order, wantPages: 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("page %d of %d", tt.page, tt.per), func(t *testing.T) {
			res := ListWorkspaces(all, ListQuery{Page: tt.page, PerPage: tt.per})
			require.Equal(t, 10, res.Total)
			require.Equal(t, tt.wantPages, res.Pages)
			if tt.wantEmpty {
				require.Empty(t, res.Items)
				return
			}
			require.Equal(t, tt.want, names(res.Items))
		})
	}
	t.Run("no workspaces", func(t *testing.T) {
		res := ListWorkspaces(nil, ListQuery{Page: 1, PerPage: 50})
		require.Zero(t, res.Total)
		require.Zero(t, res.Pages)
		require.Empty(t, res.Items)
	})
}
