package pages

import (
	"errors"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/store"
)

// runPageRefresh is the refresh period of an in-flight run's page.
const runPageRefresh = 2

type runPageData struct {
	page
	Run    store.Run
	Live   bool
	HasLog bool
	Log    string
	// Remediation is the one the run proposed or applied, if any.
	Remediation *remediationView
}

// Run serves GET /runs/{id}: the run and its log, server-rendered; an
// in-flight run's page refreshes every 2 s. Like the log itself it needs a
// read credential (HTTP Basic auth, for a browser) unless reads are open.
func (p *Pages) Run(w http.ResponseWriter, r *http.Request) {
	authed := auth.Reader(r)
	id := r.PathValue("id")
	run, err := p.src.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		p.render(w, r, http.StatusNotFound, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: unknown run", false),
			Heading: "Unknown run",
			Message: "No run with this id is recorded (it may have been pruned).",
		})
		return
	}
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	d := runPageData{Run: run}
	if l := p.src.LiveLog(id); l != nil {
		if _, closed := l.Done(); !closed {
			d.Live = true
		}
		d.HasLog, d.Log = true, string(l.Bytes())
	} else if p.src.Logs != nil {
		b, err := p.src.Logs.RunLog(r.Context(), id)
		switch {
		case err == nil:
			d.HasLog, d.Log = true, string(b)
		case !errors.Is(err, store.ErrNotFound):
			p.pageError(w, r, err)
			return
		}
	}
	if d.HasLog && !authed && runlog.HoldsValues([]byte(d.Log)) {
		p.Refuse(w, r, p.auth.ValuesRefusal())
		return
	}
	if d.Remediation, err = p.runRemediation(r.Context(), run); err != nil {
		p.pageError(w, r, err)
		return
	}
	d.page = p.newPage(r, "driftwatch: run "+run.ID+" ("+string(run.Status)+")", d.Live)
	if d.Live {
		d.RefreshEvery = runPageRefresh
	}
	p.render(w, r, http.StatusOK, p.run, d)
}
