package pages

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

type auditPageData struct {
	page
	Query   view.AuditQuery
	Entries []auditRow
	// Periods are the since choices; Active the filters set, each with
	// the link that drops it; Clear drops every filter.
	Periods []filterLink
	Active  []filterLink
	Clear   string
	APIPath string
	// More: the limit was reached, older entries are not shown.
	More bool
}

// auditRow is one entry of the page, with the links that filter by its
// actor, action and target.
type auditRow struct {
	store.AuditEntry
	ActorHref, ActionHref, TargetHref string
	// Badge is the result's badge class.
	Badge string
}

// Audit serves GET /audit: the audit log's newest entries (the
// query of GET /api/v1/audit), each actor, action and target a link
// that filters by it.
func (p *Pages) Audit(w http.ResponseWriter, r *http.Request) {
	t := p.audit
	if t == nil {
		p.pageError(w, r, errors.New("the audit page template did not parse"))
		return
	}
	q, err := view.ParseAuditQuery(r.URL.Query(), p.src.Now())
	if err != nil {
		p.badRequestPage(w, r, err)
		return
	}
	es, err := p.src.AuditEntries(r.Context(), q)
	if errors.Is(err, view.ErrAuditUnsupported) {
		p.render(w, r, http.StatusNotImplemented, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: audit log unavailable", false),
			Heading: "Audit log unavailable",
			Message: err.Error() + ".",
		})
		return
	}
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	d := auditPageData{
		page:    p.newPage(r, "driftwatch: audit log", false),
		Query:   q,
		APIPath: p.src.Prefix + "/api/v1/audit?" + auditValues(q).Encode(),
		More:    len(es) == q.Limit,
		Clear:   p.auditHref(view.AuditQuery{Limit: q.Limit}),
	}
	d.APIPath = strings.TrimSuffix(d.APIPath, "?")
	for _, e := range es {
		row := auditRow{AuditEntry: e, Badge: auditBadge(e.Result)}
		with := func(set func(*view.AuditQuery)) string {
			x := q
			set(&x)
			return p.auditHref(x)
		}
		row.ActorHref = with(func(x *view.AuditQuery) { x.Actor = e.Actor })
		row.ActionHref = with(func(x *view.AuditQuery) { x.Action = e.Action })
		if e.Target != "" {
			row.TargetHref = with(func(x *view.AuditQuery) { x.Target = e.Target })
		}
		d.Entries = append(d.Entries, row)
	}
	for _, period := range []struct{ text, since string }{{"24 hours", "24h"}, {"7 days", "7d"}, {"30 days", "30d"}, {"all kept", ""}} {
		x := q
		x.Since = period.since
		d.Periods = append(d.Periods, filterLink{Text: period.text, Href: p.auditHref(x), Active: q.Since == period.since})
	}
	for _, f := range []struct {
		name string
		v    string
		drop func(*view.AuditQuery)
	}{
		{"actor", q.Actor, func(x *view.AuditQuery) { x.Actor = "" }},
		{"action", q.Action, func(x *view.AuditQuery) { x.Action = "" }},
		{"target", q.Target, func(x *view.AuditQuery) { x.Target = "" }},
	} {
		if f.v == "" {
			continue
		}
		x := q
		f.drop(&x)
		d.Active = append(d.Active, filterLink{Text: f.name + " " + f.v, Href: p.auditHref(x)})
	}
	p.render(w, r, http.StatusOK, t, d)
}

// auditValues is the query string of an audit URL; the default limit is
// left out.
func auditValues(q view.AuditQuery) url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"since", q.Since}, {"actor", q.Actor}, {"action", q.Action}, {"target", q.Target}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if q.Limit != 0 && q.Limit != view.DefaultAuditLimit {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

func (p *Pages) auditHref(q view.AuditQuery) string {
	if v := auditValues(q); len(v) > 0 {
		return p.src.Prefix + "/audit?" + v.Encode()
	}
	return p.src.Prefix + "/audit"
}

// auditBadge is the badge class of a result: the status colours.
func auditBadge(result string) string {
	switch result {
	case store.AuditOK:
		return "clean"
	case store.AuditDenied:
		return "forbidden"
	}
	return "errored"
}
