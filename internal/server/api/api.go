package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// Daemon is what GET /api/v1/status says of the daemon besides its
// readiness.
type Daemon struct {
	// Version is driftwatch's version.
	Version string
	// Sandbox is how local runs are isolated.
	Sandbox apitypes.SandboxStatus
	// Leader, if set, returns the identity of the leader-election Lease
	// holder ("": unknown, and "leader" is omitted).
	Leader func() string
}

// API serves the JSON API's handlers; the server mounts each with its
// rule. Make one with New.
type API struct {
	src    *view.Source
	auth   *auth.Authenticator
	daemon Daemon

	// MaxStreams caps the log event streams open at once, server-wide
	// (default DefaultMaxLogStreams); one more answers 503 with
	// Retry-After.
	MaxStreams int64
	// StreamWriteTimeout bounds every write of an event stream (default
	// LogStreamWriteTimeout).
	StreamWriteTimeout time.Duration
	// streams counts the open log event streams.
	streams atomic.Int64
}

// New returns the API over src; a is the authenticator the guard admits
// its callers with (whoami, refusals of logs, OIDC sessions).
func New(src *view.Source, a *auth.Authenticator, d Daemon) *API {
	return &API{src: src, auth: a, daemon: d, MaxStreams: DefaultMaxLogStreams, StreamWriteTimeout: LogStreamWriteTimeout}
}

// Run listing limits.
const (
	DefaultRunsLimit = 50
	MaxRunsLimit     = 500
)

// Workspaces serves GET /api/v1/workspaces: the configured workspaces.
// Without any list parameter it answers as it always has: every
// workspace, by name. With any (status, label, owner, q, sort, page,
// per_page: view.ParseListQuery) it answers one page of the filtered
// list, most severe first unless sort=name, with the total, the page and
// the page size; a page past the end has no workspaces (the total says
// how many there are).
func (a *API) Workspaces(w http.ResponseWriter, r *http.Request) {
	f, err := view.ParseListQuery(r.URL.Query())
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	vs, err := a.src.Workspaces(r.Context())
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	if !f.Given {
		out := make([]apitypes.Workspace, 0, len(vs))
		for _, v := range vs {
			out = append(out, a.workspace(v))
		}
		respond.JSON(w, http.StatusOK, struct {
			Workspaces []apitypes.Workspace `json:"workspaces"`
		}{out})
		return
	}
	res := view.ListWorkspaces(vs, f)
	out := make([]apitypes.Workspace, 0, len(res.Items))
	for _, v := range res.Items {
		out = append(out, a.workspace(v))
	}
	respond.JSON(w, http.StatusOK, apitypes.WorkspacePage{
		Workspaces: out, Total: res.Total, Page: f.Page, PerPage: f.PerPage, Pages: res.Pages,
	})
}

// Workspace serves GET /api/v1/workspaces/{name}: one workspace, with
// its findings and live incidents.
func (a *API) Workspace(w http.ResponseWriter, r *http.Request) {
	v, err := a.src.Workspace(r.Context(), r.PathValue("name"))
	switch {
	case errors.Is(err, view.ErrNotConfigured):
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return
	case err != nil:
		a.internalError(w, r, err)
		return
	}
	incidents, err := a.src.LiveIncidents(r.Context(), v.Name)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	waiting, err := a.src.Waiting(r.Context(), v.Name, incidents)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	list := incidentList(incidents)
	for i, in := range incidents {
		list[i].Accepted = incidentAcceptance(waiting[in.Key])
	}
	respond.JSON(w, http.StatusOK, apitypes.WorkspaceDetail{
		Workspace: a.workspace(v),
		Findings:  findings(v.State.Findings),
		Incidents: list,
	})
}

// parseLimit reads ?limit=N: default DefaultRunsLimit, capped at
// MaxRunsLimit, an error if it is not a positive integer.
func parseLimit(q string) (int, error) {
	if q == "" {
		return DefaultRunsLimit, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 {
		return 0, errors.New("limit must be a positive integer")
	}
	return min(n, MaxRunsLimit), nil
}

// Runs serves GET /api/v1/workspaces/{name}/runs: its runs, newest
// first.
func (a *API) Runs(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := a.src.Configured(name); !ok {
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return
	}
	runs, err := a.src.Store.Runs(r.Context(), name, limit)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	out := make([]apitypes.Run, 0, len(runs))
	for _, run := range runs {
		out = append(out, runOf(run))
	}
	respond.JSON(w, http.StatusOK, struct {
		Workspace string         `json:"workspace"`
		Runs      []apitypes.Run `json:"runs"`
	}{name, out})
}

// Run serves GET /api/v1/runs/{id}: one run, with findings and phases.
func (a *API) Run(w http.ResponseWriter, r *http.Request) {
	run, err := a.src.Store.Run(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "unknown run")
		return
	case err != nil:
		a.internalError(w, r, err)
		return
	}
	respond.JSON(w, http.StatusOK, a.runDetail(run))
}

// Trigger serves POST /api/v1/workspaces/{name}/runs: it queues a run
// now (202), or answers why not (404, 409 naming the busy run, 503).
func (a *API) Trigger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := a.src.Configured(name); !ok {
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return
	}
	id, err := a.src.Control.Trigger(name)
	switch {
	case err == nil:
	case errors.Is(err, control.ErrUnknownWorkspace):
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return
	case errors.Is(err, control.ErrUnavailable):
		respond.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	case errors.Is(err, control.ErrBusy):
		// A *BusyError names the run already queued or running, if any.
		var busy *control.BusyError
		var busyID string
		if errors.As(err, &busy) {
			busyID = busy.RunID
		}
		respond.JSON(w, http.StatusConflict, apitypes.Error{Error: "a run of this workspace is already queued or running", RunID: busyID})
		return
	default:
		a.internalError(w, r, err)
		return
	}
	who, _ := auth.IdentityFrom(r.Context())
	a.src.Logger.Info("run triggered through the api", "workspace", name, "run_id", id, "by", who.Actor())
	w.Header().Set("Location", a.src.Prefix+"/api/v1/runs/"+url.PathEscape(id))
	respond.JSON(w, http.StatusAccepted, apitypes.Queued{Workspace: name, RunID: id, Status: store.RunQueued})
}

// internalError logs err and answers 500 without details.
func (a *API) internalError(w http.ResponseWriter, r *http.Request, err error) {
	respond.InternalError(w, r, a.src.Logger, err)
}

// Status serves GET /api/v1/status: the daemon itself: version,
// readiness and the isolation of local runs (a "none" sandbox is a risk
// an operator must see).
func (a *API) Status(w http.ResponseWriter, _ *http.Request) {
	out := map[string]any{"version": a.daemon.Version, "ready": true, "sandbox": a.daemon.Sandbox}
	if err := a.src.Control.Ready(); err != nil {
		out["ready"], out["not_ready"] = false, err.Error()
	}
	if a.daemon.Leader != nil {
		if l := a.daemon.Leader(); l != "" {
			out["leader"] = l
		}
	}
	respond.JSON(w, http.StatusOK, out)
}

// Notifiers serves GET /api/v1/notifiers: alert delivery per notifier.
func (a *API) Notifiers(w http.ResponseWriter, r *http.Request) {
	ns, err := a.src.Notifiers(r.Context())
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{"notifiers": ns})
}

// Whoami serves GET /api/v1/whoami: who the server takes the caller for,
// with which roles, and (proxy and session sign-ins) the CSRF token its
// mutating requests must carry.
func (a *API) Whoami(w http.ResponseWriter, r *http.Request) {
	id, _ := auth.IdentityFrom(r.Context())
	roles := make([]string, 0, len(id.Roles)+1)
	for _, role := range id.Roles {
		roles = append(roles, string(role))
	}
	if a.auth.AnonymousViewer() && !id.Has(auth.RoleViewer) {
		// anonymous_role: viewer is everyone's: the caller reads all a
		// viewer does.
		roles = append(roles, string(auth.RoleViewer))
	}
	respond.JSON(w, http.StatusOK, struct {
		Name      string   `json:"name"`
		Method    string   `json:"method"`
		Roles     []string `json:"roles"`
		CSRFToken string   `json:"csrf_token,omitempty"`
	}{id.Name, id.Method, roles, a.auth.CSRFToken(id)})
}
