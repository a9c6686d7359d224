package pages

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/store"
)

// pageAcceptancesLimit is how many acceptances a workspace page lists.
const pageAcceptancesLimit = 10

// acceptSection is the workspace page's part on accepting drift as
// code: the button (an operator signed in through the browser: its CSRF
// token), the command otherwise, and the newest acceptances.
type acceptSection struct {
	// CSRF, when set, shows the button (a form posting it).
	CSRF        string
	Acceptances []store.Acceptance
	Limit       int
	// Values: the caller may read the changes' values (auth.Reader), as
	// a run's log.
	Values bool
}

// acceptSectionFor is r's caller's accept section of workspace (nil: the
// daemon has no acceptances).
func (p *Pages) acceptSectionFor(ctx context.Context, r *http.Request, workspace string) (*acceptSection, error) {
	if p.src.Acc == nil {
		return nil, nil
	}
	xs, err := p.src.Acc.Acceptances(ctx, workspace, pageAcceptancesLimit)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: acceptances: %w", workspace, err)
	}
	return &acceptSection{Acceptances: xs, Limit: pageAcceptancesLimit, Values: auth.Reader(r), CSRF: p.operatorCSRF(r)}, nil
}

// IsForm reports an HTML form's post (the workspace page's Accept and
// Adopt buttons), which Accept and Adopt answer, as a page.
func IsForm(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "application/x-www-form-urlencoded"
}

// Accept answers the workspace page's Accept button, a form posted to
// POST /api/v1/workspaces/{name}/accept (the guard checked the operator
// role, the origin and the CSRF token): it starts accepting the
// workspace's drift as code, as the API does, and sends the browser back
// to the page.
func (p *Pages) Accept(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if p.src.Acc == nil {
		p.Message(w, r, http.StatusNotImplemented, "Not available", "accepting drift as code is not available on this driftwatch")
		return
	}
	if _, ok := p.src.Configured(name); !ok {
		p.Message(w, r, http.StatusNotFound, "Unknown workspace", fmt.Sprintf("no workspace called %q is configured", name))
		return
	}
	var addrs []string
	for _, a := range r.PostForm["address"] {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	who, _ := auth.IdentityFrom(r.Context())
	x, err := p.src.Acc.StartAccept(name, addrs, false, who.Actor())
	var busy interface{ AcceptanceID() string }
	switch {
	case err == nil:
		p.src.Logger.Info("drift acceptance started from the workspace page", "workspace", name, "acceptance", x.ID, "by", who.Actor())
	case errors.Is(err, control.ErrUnknownWorkspace):
		p.Message(w, r, http.StatusNotFound, "Unknown workspace", fmt.Sprintf("no workspace called %q is configured", name))
		return
	case errors.Is(err, control.ErrUnavailable):
		p.Message(w, r, http.StatusServiceUnavailable, "Not available", err.Error())
		return
	case errors.As(err, &busy):
		p.Message(w, r, http.StatusConflict, "Already running", "an acceptance of this workspace is already running: "+busy.AcceptanceID())
		return
	default:
		p.pageError(w, r, err)
		return
	}
	http.Redirect(w, r, p.src.Prefix+"/workspaces/"+url.PathEscape(name)+"#acceptances", http.StatusSeeOther)
}
