package server

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
)

// Workspace list paging: the status page and GET /api/v1/workspaces show
// DefaultPerPage workspaces a page unless per_page says otherwise, at most
// MaxPerPage.
const (
	DefaultPerPage = 50
	MaxPerPage     = 500
)

// maxQueryLen bounds the text filter (q): a name, an owner or a label is
// far shorter, and the filter is matched against every workspace.
const maxQueryLen = 200

// maxOwnerChoices bounds the owners the status page offers as filter
// links; with more, the text box (which matches owners) and owner= in the
// URL still select one.
const maxOwnerChoices = 30

// Sort orders of a workspace list.
const (
	sortSeverity = "severity" // most severe status, then longest in it, then name
	sortName     = "name"
)

// listQuery is what a workspace list asks for: filters (all must hold),
// an order and a page. The status page and GET /api/v1/workspaces read
// the same parameters (parseListQuery).
type listQuery struct {
	// Statuses: any of them (none: every status), in summaryStatuses order.
	Statuses []drift.Status
	// Labels must all be on a workspace (AND), in the order given.
	Labels labelList
	// Owner must be the workspace's owner ("": any).
	Owner string
	// Q is a case-insensitive substring of the name, the owner or a
	// label (as key=value) ("": no text filter).
	Q string
	// Sort is sortSeverity or sortName.
	Sort string
	// Page is 1-based; PerPage how many a page holds.
	Page, PerPage int
	// Given: the request named at least one of the list's parameters.
	// Without any, the API answers as it did before paging: every
	// workspace, by name.
	Given bool
}

// listParams are the parameters parseListQuery reads; single-valued ones
// may be given once.
var listParams = map[string]bool{ // name → repeatable
	"status": true, "label": true, "owner": false, "q": false, "sort": false, "page": false, "per_page": false,
}

// parseListQuery reads a workspace list's query parameters: status
// (repeatable, any of), label (key=value, repeatable, all of), owner, q,
// sort (severity or name), page (1-based) and per_page (1 to
// MaxPerPage). Any other parameter, or a bad value, is an error that
// names the parameter, so that a misspelt filter is never silently
// ignored.
func parseListQuery(q url.Values) (listQuery, error) {
	f := listQuery{Sort: sortSeverity, Page: 1, PerPage: DefaultPerPage}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		repeatable, ok := listParams[k]
		if !ok {
			return f, fmt.Errorf("unknown query parameter %q: want status, label, owner, q, sort, page or per_page", k)
		}
		if n := len(q[k]); !repeatable && n > 1 {
			return f, fmt.Errorf("query parameter %s: given %d times, at most once", k, n)
		}
		f.Given = true
	}
	seen := map[drift.Status]bool{}
	for _, v := range q["status"] {
		st := drift.Status(v)
		if !slices.Contains(summaryStatuses, st) {
			return f, fmt.Errorf("query parameter status: %q is not a status: want %s", v, statusNames())
		}
		seen[st] = true
	}
	for _, st := range summaryStatuses {
		if seen[st] {
			f.Statuses = append(f.Statuses, st)
		}
	}
	for _, kv := range q["label"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return f, fmt.Errorf("query parameter label: %q is not key=value", kv)
		}
		if !slices.Contains(f.Labels, [2]string{k, v}) {
			f.Labels = append(f.Labels, [2]string{k, v})
		}
	}
	if _, ok := q["owner"]; ok {
		if f.Owner = q.Get("owner"); f.Owner == "" {
			return f, errors.New("query parameter owner: empty; leave it out for every owner")
		}
	}
	// An empty q is what a search box sends when left empty: no filter.
	f.Q = strings.TrimSpace(q.Get("q"))
	if len(f.Q) > maxQueryLen {
		return f, fmt.Errorf("query parameter q: longer than %d bytes", maxQueryLen)
	}
	if v, ok := q["sort"]; ok {
		switch v[0] {
		case sortSeverity, sortName:
			f.Sort = v[0]
		default:
			return f, fmt.Errorf("query parameter sort: %q: want severity or name", v[0])
		}
	}
	var err error
	if f.Page, err = positiveParam(q, "page", 1, 0); err != nil {
		return f, err
	}
	if f.PerPage, err = positiveParam(q, "per_page", DefaultPerPage, MaxPerPage); err != nil {
		return f, err
	}
	return f, nil
}

// positiveParam reads the integer parameter name: def when absent, an
// error unless it is a positive integer (at most limit, when limit > 0).
func positiveParam(q url.Values, name string, def, limit int) (int, error) {
	v, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("query parameter %s: %q is not a positive integer", name, v[0])
	}
	if limit > 0 && n > limit {
		return 0, fmt.Errorf("query parameter %s: %d is more than %d", name, n, limit)
	}
	return n, nil
}

// statusNames lists the statuses a status filter accepts.
func statusNames() string {
	names := make([]string, len(summaryStatuses))
	for i, s := range summaryStatuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// filtered reports whether f narrows the list at all.
func (f listQuery) filtered() bool {
	return len(f.Statuses) > 0 || len(f.Labels) > 0 || f.Owner != "" || f.Q != ""
}

// matchesBesidesStatus reports whether v passes every filter but the
// status one (q is lowercased already: see listWorkspaces).
func (f listQuery) matchesBesidesStatus(v *workspaceView, q string) bool {
	if f.Owner != "" && v.Owner != f.Owner {
		return false
	}
	for _, kv := range f.Labels {
		if got, ok := v.Labels[kv[0]]; !ok || got != kv[1] {
			return false
		}
	}
	return q == "" || matchesText(v, q)
}

// matchesText reports whether q (lowercase) is in v's name, owner or one
// of its labels written key=value.
func matchesText(v *workspaceView, q string) bool {
	if strings.Contains(strings.ToLower(v.Name), q) || strings.Contains(strings.ToLower(v.Owner), q) {
		return true
	}
	for k, val := range v.Labels {
		if strings.Contains(strings.ToLower(k+"="+val), q) {
			return true
		}
	}
	return false
}

// listResult is one page of a workspace list.
type listResult struct {
	// Items are the page's workspaces, in order.
	Items []workspaceView
	// Total counts the workspaces every filter selects; Pages is how
	// many pages they fill (0 when none).
	Total, Pages int
	// ByStatus counts, per status, the workspaces every filter but the
	// status one selects: what each status choice would show.
	ByStatus map[drift.Status]int
}

// listWorkspaces filters, orders and pages vs (which it does not
// change). Only the selected workspaces are sorted; a page past the end
// has no items.
func listWorkspaces(vs []workspaceView, f listQuery) listResult {
	res := listResult{ByStatus: make(map[drift.Status]int, len(summaryStatuses))}
	q := strings.ToLower(f.Q)
	var sel []workspaceView
	for i := range vs {
		v := &vs[i]
		if !f.matchesBesidesStatus(v, q) {
			continue
		}
		res.ByStatus[v.Status]++
		if len(f.Statuses) == 0 || slices.Contains(f.Statuses, v.Status) {
			sel = append(sel, *v)
		}
	}
	if f.Sort == sortName {
		slices.SortFunc(sel, func(a, b workspaceView) int { return cmp.Compare(a.Name, b.Name) })
	} else {
		sortBySeverity(sel)
	}
	res.Total = len(sel)
	per := max(f.PerPage, 1)
	res.Pages = (res.Total + per - 1) / per
	from := min((max(f.Page, 1)-1)*per, res.Total)
	res.Items = sel[from:min(from+per, res.Total)]
	return res
}

// values is f as query parameters, leaving out defaults: a link's query.
func (f listQuery) values() url.Values {
	q := url.Values{}
	for _, s := range f.Statuses {
		q.Add("status", string(s))
	}
	for _, kv := range f.Labels {
		q.Add("label", kv[0]+"="+kv[1])
	}
	if f.Owner != "" {
		q.Set("owner", f.Owner)
	}
	if f.Q != "" {
		q.Set("q", f.Q)
	}
	if f.Sort != sortSeverity && f.Sort != "" {
		q.Set("sort", f.Sort)
	}
	if f.PerPage != DefaultPerPage && f.PerPage > 0 {
		q.Set("per_page", strconv.Itoa(f.PerPage))
	}
	if f.Page > 1 {
		q.Set("page", strconv.Itoa(f.Page))
	}
	return q
}

// listPath is the status page's URL for f, under prefix.
func listPath(prefix string, f listQuery) string {
	if q := f.values().Encode(); q != "" {
		return prefix + "/?" + q
	}
	return prefix + "/"
}

// The changes of a query that a link makes. Every change of a filter
// goes back to page 1: the old page number means nothing in a new list.

func (f listQuery) atPage(n int) listQuery { f.Page = n; return f }

func (f listQuery) toggleStatus(s drift.Status) listQuery {
	f.Page = 1
	if slices.Contains(f.Statuses, s) {
		f.Statuses = slices.DeleteFunc(slices.Clone(f.Statuses), func(x drift.Status) bool { return x == s })
		return f
	}
	seen := map[drift.Status]bool{s: true}
	for _, x := range f.Statuses {
		seen[x] = true
	}
	f.Statuses = nil
	for _, x := range summaryStatuses {
		if seen[x] {
			f.Statuses = append(f.Statuses, x)
		}
	}
	return f
}

// withLabel sets label k to v, replacing any value of k already chosen
// (a workspace has one value per key: two would select nothing).
func (f listQuery) withLabel(k, v string) listQuery {
	f.Page = 1
	var ls labelList
	for _, kv := range f.Labels {
		if kv[0] != k {
			ls = append(ls, kv)
		}
	}
	ls = append(ls, [2]string{k, v})
	f.Labels = ls
	return f
}

func (f listQuery) withoutLabel(i int) listQuery {
	f.Page = 1
	f.Labels = slices.Concat(f.Labels[:i], f.Labels[i+1:])
	return f
}

func (f listQuery) withOwner(o string) listQuery { f.Page = 1; f.Owner = o; return f }

func (f listQuery) withQ(q string) listQuery { f.Page = 1; f.Q = q; return f }

// cleared drops every filter, keeping the order and page size.
func (f listQuery) cleared() listQuery {
	return listQuery{Sort: f.Sort, Page: 1, PerPage: f.PerPage}
}

// statusChip is a status with its count and the link that adds it to the
// status filter, or (Active) drops it.
type statusChip struct {
	Status drift.Status
	N      int
	Href   string
	Active bool
}

// hiddenField keeps a parameter through the search form.
type hiddenField struct{ Name, Value string }

// pageLink is one entry of the pager: a page number (Href "" for the
// current page) or a gap (N 0).
type pageLink struct {
	N       int
	Href    string
	Current bool
}

// listView is everything the status page shows of the list: the filter
// bar, the active filters, the page's rows and the pager.
type listView struct {
	Query    listQuery
	Result   listResult
	Statuses []statusChip
	Owners   []filterLink
	// OwnersHidden: more owners than maxOwnerChoices, left out of the
	// links (the text box and owner= still select one).
	OwnersHidden int
	Labels       []labelChoice
	// Active are the filters in force, each with the link that drops it;
	// Clear drops them all ("" when none).
	Active   []filterLink
	Clear    string
	Filtered bool
	// Hidden are the parameters the search form keeps (all but q and
	// page).
	Hidden []hiddenField
	// From and To number the rows shown (1-based, inclusive; 0 when none).
	From, To   int
	Prev, Next string
	Pager      []pageLink
	// PastEnd: the page asked for is beyond the last; Last links to it.
	PastEnd bool
	Last    string
	// APIPath is the same list as JSON.
	APIPath string
}

// newListView builds the filter bar and pager of f's result over every
// configured workspace (all, for the owner and label choices).
func newListView(prefix string, all []workspaceView, f listQuery, res listResult) listView {
	href := func(g listQuery) string { return listPath(prefix, g) }
	lv := listView{Query: f, Result: res}
	for _, s := range summaryStatuses {
		lv.Statuses = append(lv.Statuses, statusChip{
			Status: s, N: res.ByStatus[s], Href: href(f.toggleStatus(s)), Active: slices.Contains(f.Statuses, s),
		})
	}

	owners := map[string]bool{}
	values := map[string]map[string]bool{}
	for i := range all {
		if o := all[i].Owner; o != "" {
			owners[o] = true
		}
		for k, v := range all[i].Labels {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	if len(owners) > maxOwnerChoices {
		lv.OwnersHidden = len(owners)
	} else if len(owners) > 0 {
		lv.Owners = append(lv.Owners, filterLink{Text: "any", Href: href(f.withOwner("")), Active: f.Owner == ""})
		for _, o := range slices.Sorted(maps.Keys(owners)) {
			lv.Owners = append(lv.Owners, filterLink{Text: o, Href: href(f.withOwner(o)), Active: o == f.Owner})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if len(values[k]) > maxLabelChoices {
			continue
		}
		c := labelChoice{Key: k}
		for _, v := range slices.Sorted(maps.Keys(values[k])) {
			c.Values = append(c.Values, filterLink{Text: v, Href: href(f.withLabel(k, v)), Active: slices.Contains(f.Labels, [2]string{k, v})})
		}
		lv.Labels = append(lv.Labels, c)
	}

	for _, s := range f.Statuses {
		lv.Active = append(lv.Active, filterLink{Text: "status " + string(s), Href: href(f.toggleStatus(s))})
	}
	for i, kv := range f.Labels {
		lv.Active = append(lv.Active, filterLink{Text: kv[0] + "=" + kv[1], Href: href(f.withoutLabel(i))})
	}
	if f.Owner != "" {
		lv.Active = append(lv.Active, filterLink{Text: "owner " + f.Owner, Href: href(f.withOwner(""))})
	}
	if f.Q != "" {
		lv.Active = append(lv.Active, filterLink{Text: "“" + f.Q + "”", Href: href(f.withQ(""))})
	}
	if lv.Filtered = f.filtered(); lv.Filtered {
		lv.Clear = href(f.cleared())
	}

	keep := f.withQ("").values()
	keep.Del("page")
	for _, k := range slices.Sorted(maps.Keys(keep)) {
		for _, v := range keep[k] {
			lv.Hidden = append(lv.Hidden, hiddenField{k, v})
		}
	}

	if n := len(res.Items); n > 0 {
		lv.From = (f.Page-1)*f.PerPage + 1
		lv.To = lv.From + n - 1
	}
	if f.Page > 1 && f.Page <= res.Pages {
		lv.Prev = href(f.atPage(f.Page - 1))
	}
	if f.Page < res.Pages {
		lv.Next = href(f.atPage(f.Page + 1))
	}
	if res.Pages > 0 && f.Page > res.Pages {
		lv.PastEnd, lv.Last = true, href(f.atPage(res.Pages))
	}
	if res.Pages > 1 {
		for _, n := range pagerNumbers(f.Page, res.Pages) {
			l := pageLink{N: n, Current: n == f.Page}
			if n > 0 && !l.Current {
				l.Href = href(f.atPage(n))
			}
			lv.Pager = append(lv.Pager, l)
		}
	}
	api := f.values()
	if !f.Given {
		// The page's defaults, written out: without any parameter the API
		// answers every workspace by name, not this page.
		api.Set("page", "1")
	}
	lv.APIPath = prefix + "/api/v1/workspaces?" + api.Encode()
	return lv
}

// pagerNumbers are the page numbers a pager shows: the first, the last,
// and two either side of the current one, with 0 for each gap of more
// than one page (a gap of one is that page's number).
func pagerNumbers(cur, pages int) []int {
	shown := func(n int) bool { return n == 1 || n == pages || (n >= cur-2 && n <= cur+2) }
	var out []int
	for n := 1; n <= pages; n++ {
		switch {
		case shown(n), shown(n-1) && shown(n+1):
			out = append(out, n)
		case out[len(out)-1] != 0:
			out = append(out, 0)
		}
	}
	return out
}

// thousands writes n with a comma between groups of three digits:
// "1,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
