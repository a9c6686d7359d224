package pages

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
)

type adoptPageData struct {
	page
	A apitypes.Adoption
	// Download is the generated file as a data: URL ("" when not
	// proven): the page's download link, no second request.
	Download template.URL
}

// Adopt answers the workspace page's Adopt button of an unmanaged
// finding, a form posted to POST /api/v1/workspaces/{name}/adopt (the
// guard checked the operator role, the origin and the CSRF token): it
// adopts the form's findings as the API does, while the browser waits,
// and shows the proof's result with the generated file to copy or
// download.
func (p *Pages) Adopt(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	who, _ := auth.IdentityFrom(r.Context())
	a, refused := p.src.Adopt(r.Context(), w, name, r.PostForm["finding"], who.Actor())
	if refused != nil {
		p.Message(w, r, refused.Status, "Not adopted", refused.Reason)
		return
	}
	d := adoptPageData{page: p.newPage(r, "driftwatch: adopt in "+name+" ("+a.State+")", false), A: a}
	if a.File != "" {
		// Percent-encoded whole: the URL carries the text and nothing
		// else.
		d.Download = template.URL("data:text/plain;charset=utf-8," + url.PathEscape(a.File)) //nolint:gosec // percent-encoded text of our own making
	}
	p.render(w, r, http.StatusOK, p.adopt, d)
}

// operatorCSRF is the CSRF token of r's caller when an operator signed
// in through the browser (the page's buttons post forms), else "".
func (p *Pages) operatorCSRF(r *http.Request) string {
	if id, ok := auth.IdentityFrom(r.Context()); ok && id.Ambient() && id.Has(auth.RoleOperator) {
		return p.auth.CSRFToken(id)
	}
	return ""
}

// adoptCSRF is the workspace page's AdoptCSRF: the operator's token on
// a scan's page when the daemon adopts, else "".
func (p *Pages) adoptCSRF(r *http.Request, w control.WorkspaceInfo) string {
	if p.src.Adp == nil || !w.Scan {
		return ""
	}
	return p.operatorCSRF(r)
}
