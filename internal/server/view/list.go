package view

import (
	"cmp"
	"encoding/json"
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

// Sort orders of a workspace list.
const (
	SortSeverity = "severity" // most severe status, then longest in it, then name
	SortName     = "name"
)

// ListQuery is what a workspace list asks for: filters (all must hold),
// an order and a page. The status page and GET /api/v1/workspaces read
// the same parameters (ParseListQuery).
type ListQuery struct {
	// Statuses: any of them (none: every status), in Statuses order.
	Statuses []drift.Status
	// Labels must all be on a workspace (AND), in the order given.
	Labels LabelList
	// Owner must be the workspace's owner ("": any).
	Owner string
	// Q is a case-insensitive substring of the name, the owner or a
	// label (as key=value) ("": no text filter).
	Q string
	// Sort is SortSeverity or SortName.
	Sort string
	// Page is 1-based; PerPage how many a page holds.
	Page, PerPage int
	// Given: the request named at least one of the list's parameters.
	// Without any, the API answers as it did before paging: every
	// workspace, by name.
	Given bool
}

// listParams are the parameters ParseListQuery reads; single-valued ones
// may be given once.
var listParams = map[string]bool{ // name → repeatable
	"status": true, "label": true, "owner": false, "q": false, "sort": false, "page": false, "per_page": false,
}

// ParseListQuery reads a workspace list's query parameters: status
// (repeatable, any of), label (key=value, repeatable, all of), owner, q,
// sort (severity or name), page (1-based) and per_page (1 to
// MaxPerPage). Any other parameter, or a bad value, is an error that
// names the parameter, so that a misspelt filter is never silently
// ignored.
func ParseListQuery(q url.Values) (ListQuery, error) {
	f := ListQuery{Sort: SortSeverity, Page: 1, PerPage: DefaultPerPage}
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
		if !slices.Contains(Statuses, st) {
			return f, fmt.Errorf("query parameter status: %q is not a status: want %s", v, statusNames())
		}
		seen[st] = true
	}
	for _, st := range Statuses {
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
		case SortSeverity, SortName:
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
	names := make([]string, len(Statuses))
	for i, s := range Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Filtered reports whether f narrows the list at all.
func (f ListQuery) Filtered() bool {
	return len(f.Statuses) > 0 || len(f.Labels) > 0 || f.Owner != "" || f.Q != ""
}

// matchesBesidesStatus reports whether v passes every filter but the
// status one (q is lowercased already: see ListWorkspaces).
func (f ListQuery) matchesBesidesStatus(v *WorkspaceView, q string) bool {
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
func matchesText(v *WorkspaceView, q string) bool {
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

// ListResult is one page of a workspace list.
type ListResult struct {
	// Items are the page's workspaces, in order.
	Items []WorkspaceView
	// Total counts the workspaces every filter selects; Pages is how
	// many pages they fill (0 when none).
	Total, Pages int
	// ByStatus counts, per status, the workspaces every filter but the
	// status one selects: what each status choice would show.
	ByStatus map[drift.Status]int
}

// ListWorkspaces filters, orders and pages vs (which it does not
// change). Only the selected workspaces are sorted; a page past the end
// has no items.
func ListWorkspaces(vs []WorkspaceView, f ListQuery) ListResult {
	res := ListResult{ByStatus: make(map[drift.Status]int, len(Statuses))}
	q := strings.ToLower(f.Q)
	var sel []WorkspaceView
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
	if f.Sort == SortName {
		slices.SortFunc(sel, func(a, b WorkspaceView) int { return cmp.Compare(a.Name, b.Name) })
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

// Values is f as query parameters, leaving out defaults: a link's query.
func (f ListQuery) Values() url.Values {
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
	if f.Sort != SortSeverity && f.Sort != "" {
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

// The changes of a query that a link makes. Every change of a filter
// goes back to page 1: the old page number means nothing in a new list.

// AtPage is f at page n.
func (f ListQuery) AtPage(n int) ListQuery { f.Page = n; return f }

// ToggleStatus adds status s to the status filter, or drops it.
func (f ListQuery) ToggleStatus(s drift.Status) ListQuery {
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
	for _, x := range Statuses {
		if seen[x] {
			f.Statuses = append(f.Statuses, x)
		}
	}
	return f
}

// WithLabel sets label k to v, replacing any value of k already chosen
// (a workspace has one value per key: two would select nothing).
func (f ListQuery) WithLabel(k, v string) ListQuery {
	f.Page = 1
	var ls LabelList
	for _, kv := range f.Labels {
		if kv[0] != k {
			ls = append(ls, kv)
		}
	}
	ls = append(ls, [2]string{k, v})
	f.Labels = ls
	return f
}

// WithoutLabel drops the i-th label filter.
func (f ListQuery) WithoutLabel(i int) ListQuery {
	f.Page = 1
	f.Labels = slices.Concat(f.Labels[:i], f.Labels[i+1:])
	return f
}

// WithOwner is f with owner o ("": any).
func (f ListQuery) WithOwner(o string) ListQuery { f.Page = 1; f.Owner = o; return f }

// WithQ is f with the text filter q ("": none).
func (f ListQuery) WithQ(q string) ListQuery { f.Page = 1; f.Q = q; return f }

// Cleared drops every filter, keeping the order and page size.
func (f ListQuery) Cleared() ListQuery {
	return ListQuery{Sort: f.Sort, Page: 1, PerPage: f.PerPage}
}

// LabelList is a label filter in the order given, as JSON an object.
type LabelList [][2]string

// MarshalJSON writes the labels as an object, in their order.
func (l LabelList) MarshalJSON() ([]byte, error) {
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
