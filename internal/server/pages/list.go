package pages

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/view"
)

// listPath is the status page's URL for f, under prefix.
func listPath(prefix string, f view.ListQuery) string {
	if q := f.Values().Encode(); q != "" {
		return prefix + "/?" + q
	}
	return prefix + "/"
}

// maxOwnerChoices bounds the owners the status page offers as filter
// links; with more, the text box (which matches owners) and owner= in the
// URL still select one.
const maxOwnerChoices = 30

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
	Query    view.ListQuery
	Result   view.ListResult
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
func newListView(prefix string, all []view.WorkspaceView, f view.ListQuery, res view.ListResult) listView {
	href := func(g view.ListQuery) string { return listPath(prefix, g) }
	lv := listView{Query: f, Result: res}
	for _, s := range view.Statuses {
		lv.Statuses = append(lv.Statuses, statusChip{
			Status: s, N: res.ByStatus[s], Href: href(f.ToggleStatus(s)), Active: slices.Contains(f.Statuses, s),
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
		lv.Owners = append(lv.Owners, filterLink{Text: "any", Href: href(f.WithOwner("")), Active: f.Owner == ""})
		for _, o := range slices.Sorted(maps.Keys(owners)) {
			lv.Owners = append(lv.Owners, filterLink{Text: o, Href: href(f.WithOwner(o)), Active: o == f.Owner})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if len(values[k]) > MaxLabelChoices {
			continue
		}
		c := labelChoice{Key: k}
		for _, v := range slices.Sorted(maps.Keys(values[k])) {
			c.Values = append(c.Values, filterLink{Text: v, Href: href(f.WithLabel(k, v)), Active: slices.Contains(f.Labels, [2]string{k, v})})
		}
		lv.Labels = append(lv.Labels, c)
	}

	for _, s := range f.Statuses {
		lv.Active = append(lv.Active, filterLink{Text: "status " + string(s), Href: href(f.ToggleStatus(s))})
	}
	for i, kv := range f.Labels {
		lv.Active = append(lv.Active, filterLink{Text: kv[0] + "=" + kv[1], Href: href(f.WithoutLabel(i))})
	}
	if f.Owner != "" {
		lv.Active = append(lv.Active, filterLink{Text: "owner " + f.Owner, Href: href(f.WithOwner(""))})
	}
	if f.Q != "" {
		lv.Active = append(lv.Active, filterLink{Text: "“" + f.Q + "”", Href: href(f.WithQ(""))})
	}
	if lv.Filtered = f.Filtered(); lv.Filtered {
		lv.Clear = href(f.Cleared())
	}

	keep := f.WithQ("").Values()
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
		lv.Prev = href(f.AtPage(f.Page - 1))
	}
	if f.Page < res.Pages {
		lv.Next = href(f.AtPage(f.Page + 1))
	}
	if res.Pages > 0 && f.Page > res.Pages {
		lv.PastEnd, lv.Last = true, href(f.AtPage(res.Pages))
	}
	if res.Pages > 1 {
		for _, n := range pagerNumbers(f.Page, res.Pages) {
			l := pageLink{N: n, Current: n == f.Page}
			if n > 0 && !l.Current {
				l.Href = href(f.AtPage(n))
			}
			lv.Pager = append(lv.Pager, l)
		}
	}
	api := f.Values()
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
