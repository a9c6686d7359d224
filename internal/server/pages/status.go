package pages

import (
	"fmt"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

type summaryItem struct {
	Status drift.Status
	N      int
}

type statusPageData struct {
	page
	Notifiers []notifierView
	// Verdict and Tone are about every configured workspace, whatever
	// the filters.
	Verdict string
	Tone    string // "bad", "warn" or "" (all clean)
	// Configured counts every configured workspace.
	Configured int
	// List is the filtered page of workspaces, with its filter bar and
	// pager; Workspaces are its rows.
	List       listView
	Workspaces []view.WorkspaceView
	// Remediation is nil when the daemon has no remediation control.
	Remediation *remediationSummary
	// Held are the workspaces whose notifications are held now (by a
	// silence or a maintenance window), soonest release first; HeldBy
	// is the same by name.
	Held   []heldWorkspace
	HeldBy map[string]*hold
	// HeldShown are the first of Held the headline names (MaxHeldNames),
	// HeldMore how many it leaves out.
	HeldShown []heldWorkspace
	HeldMore  int
	// Groups are the open group incidents.
	Groups []store.GroupIncident
}

// MaxHeldNames bounds the workspaces the status page's "notifications
// held" line names: a window over hundreds of workspaces is summed up,
// and the Silences page lists them all.
const MaxHeldNames = 20

// notifierView is a notifier's row on the status page.
type notifierView struct {
	apitypes.NotifierStatus
	Failing bool
}

// statusSummary counts workspaces per status and words the headline.
func statusSummary(vs []view.WorkspaceView) (items []summaryItem, verdict, tone string) {
	n := map[drift.Status]int{}
	for _, v := range vs {
		n[v.Status]++
	}
	for _, s := range view.Statuses {
		items = append(items, summaryItem{s, n[s]})
	}
	bad := n[drift.StatusErrored] + n[drift.StatusForbidden] + n[drift.StatusDrift] + n[drift.StatusValidation]
	switch {
	case len(vs) == 0:
		return items, "No workspaces", "warn"
	case bad > 0:
		return items, fmt.Sprintf("%d of %d need attention", bad, len(vs)), "bad"
	case n[drift.StatusPending] > 0:
		return items, fmt.Sprintf("No drift · %d with pending changes", n[drift.StatusPending]), "warn"
	case n[view.StatusUnknown] > 0:
		return items, fmt.Sprintf("No drift · %d not checked yet", n[view.StatusUnknown]), "warn"
	}
	return items, fmt.Sprintf("All %d clean", len(vs)), ""
}

// Status serves GET /: the status page (the list's filters as
// view.ParseListQuery reads them, 50 a page).
func (p *Pages) Status(w http.ResponseWriter, r *http.Request) {
	f, err := view.ParseListQuery(r.URL.Query())
	if err != nil {
		p.badRequestPage(w, r, err)
		return
	}
	vs, err := p.src.Workspaces(r.Context())
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	ns, err := p.src.Notifiers(r.Context())
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	now := p.src.Now()
	var nvs []notifierView
	for _, n := range ns {
		nvs = append(nvs, notifierView{NotifierStatus: n, Failing: n.Failing(now)})
	}
	rem, err := p.remediationSummary(r.Context(), vs)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	held, err := p.heldNow(r, now)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	groups, err := p.src.GroupIncidents(r.Context(), false)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	// The headline is about every workspace; the table about the filtered
	// page: only its rows are rendered, which keeps the page fast however
	// many workspaces are configured.
	_, verdict, tone := statusSummary(vs)
	res := view.ListWorkspaces(vs, f)
	title := "driftwatch: " + verdict
	if f.Filtered() || f.Page > 1 {
		title += fmt.Sprintf(" · page %d, %d shown", f.Page, len(res.Items))
	}
	d := statusPageData{
		page:    p.newPage(r, title, true),
		Verdict: verdict, Tone: tone, Configured: len(vs),
		List: newListView(p.src.Prefix, vs, f, res), Workspaces: res.Items,
		Notifiers: nvs, Remediation: rem,
		Held: held, HeldBy: heldBy(held), Groups: groups,
	}
	d.HeldShown = held[:min(len(held), MaxHeldNames)]
	d.HeldMore = len(held) - len(d.HeldShown)
	p.render(w, r, http.StatusOK, p.status, d)
}
