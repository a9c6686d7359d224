package pages

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// pageRunsLimit is how many runs a workspace page lists.
const pageRunsLimit = 20

type workspacePageData struct {
	page
	W         view.WorkspaceView
	Findings  []drift.Finding
	Runs      []store.Run
	RunsLimit int
	APIBase   string
	// HasRemediation: the daemon has remediation control; Remediations
	// are the workspace's newest.
	HasRemediation    bool
	Remediations      []remediationView
	RemediationsLimit int
	// Incidents are the workspace's open and confirming incidents.
	Incidents []store.Incident
	// Hold is what holds its notifications now or next (nil: nothing).
	Hold *hold
	// Accept is the part on accepting drift as code (nil: none);
	// Waiting the proposal each live drift incident waits for, by key.
	Accept  *acceptSection
	Waiting map[string]*store.Acceptance
	// Groups are the open group incidents that hold some of its
	// findings.
	Groups []view.WorkspaceGroup
	// AdoptCSRF, set for an operator signed in through the browser on a
	// scan's page of a daemon that adopts, shows each unmanaged
	// finding's Adopt button (a form posting it).
	AdoptCSRF string
}

// Workspace serves GET /workspaces/{name}: one workspace's page.
func (p *Pages) Workspace(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, err := p.src.Workspace(r.Context(), name)
	if errors.Is(err, view.ErrNotConfigured) {
		p.render(w, r, http.StatusNotFound, p.message, messagePageData{
			page:    p.newPage(r, "driftwatch: unknown workspace", false),
			Heading: "Unknown workspace",
			Message: fmt.Sprintf("No workspace called %q is configured.", name),
		})
		return
	}
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	runs, err := p.src.Store.Runs(r.Context(), name, pageRunsLimit)
	if err != nil {
		p.pageError(w, r, fmt.Errorf("workspace %q: runs: %w", name, err))
		return
	}
	rems, err := p.remediationViews(r.Context(), name, pageRemediationsLimit)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	incidents, err := p.src.LiveIncidents(r.Context(), name)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	h, err := p.holdOf(r, p.src.Now(), v.WorkspaceInfo)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	acc, err := p.acceptSectionFor(r.Context(), r, name)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	waiting, err := p.src.Waiting(r.Context(), name, incidents)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	groups, err := p.src.GroupsOf(r.Context(), name)
	if err != nil {
		p.pageError(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, p.workspace, workspacePageData{
		page:              p.newPage(r, "driftwatch: "+name+" ("+string(v.Status)+")", true),
		W:                 v,
		Findings:          view.SortedFindings(v.State.Findings),
		Runs:              runs,
		RunsLimit:         pageRunsLimit,
		APIBase:           p.src.APIBase,
		HasRemediation:    p.src.Rem != nil,
		Remediations:      rems,
		RemediationsLimit: pageRemediationsLimit,
		Incidents:         incidents,
		Hold:              h,
		Accept:            acc,
		Waiting:           waiting,
		Groups:            groups,
		AdoptCSRF:         p.adoptCSRF(r, v.WorkspaceInfo),
	})
}
