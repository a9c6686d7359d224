package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/driftwatch/driftwatch/internal/store"
)

// Run listing limits.
const (
	DefaultRunsLimit = 50
	MaxRunsLimit     = 500
)

// apiWorkspaces lists the configured workspaces. Without any list
// parameter it answers as it always has: every workspace, by name. With
// any (status, label, owner, q, sort, page, per_page: parseListQuery) it
// answers one page of the filtered list, most severe first unless
// sort=name, with the total, the page and the page size; a page past the
// end has no workspaces (the total says how many there are).
func (s *Server) apiWorkspaces(w http.ResponseWriter, r *http.Request) {
	f, err := parseListQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	vs, err := s.workspaces(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if !f.Given {
		out := make([]apiWorkspace, 0, len(vs))
		for _, v := range vs {
			out = append(out, s.toAPIWorkspace(v))
		}
		writeJSON(w, http.StatusOK, struct {
			Workspaces []apiWorkspace `json:"workspaces"`
		}{out})
		return
	}
	res := listWorkspaces(vs, f)
	out := make([]apiWorkspace, 0, len(res.Items))
	for _, v := range res.Items {
		out = append(out, s.toAPIWorkspace(v))
	}
	writeJSON(w, http.StatusOK, apiWorkspacePage{
		Workspaces: out, Total: res.Total, Page: f.Page, PerPage: f.PerPage, Pages: res.Pages,
	})
}

// apiWorkspacePage is one page of the workspace list.
type apiWorkspacePage struct {
	Workspaces []apiWorkspace `json:"workspaces"`
	// Total counts the workspaces the filters select, over every page.
	Total   int `json:"total"`
	Page    int `json:"page"`
	PerPage int `json:"per_page"`
	Pages   int `json:"pages"`
}

func (s *Server) apiWorkspace(w http.ResponseWriter, r *http.Request) {
	v, err := s.workspace(r.Context(), r.PathValue("name"))
	switch {
	case errors.Is(err, errNotConfigured):
		writeError(w, http.StatusNotFound, "unknown workspace")
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	incidents, err := s.liveIncidents(r.Context(), v.Name)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiWorkspaceDetail{
		apiWorkspace: s.toAPIWorkspace(v),
		Findings:     toAPIFindings(v.State.Findings),
		Incidents:    toAPIIncidents(incidents),
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

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := s.configured(name); !ok {
		writeError(w, http.StatusNotFound, "unknown workspace")
		return
	}
	runs, err := s.o.Store.Runs(r.Context(), name, limit)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	out := make([]apiRun, 0, len(runs))
	for _, run := range runs {
		out = append(out, toAPIRun(run))
	}
	writeJSON(w, http.StatusOK, struct {
		Workspace string   `json:"workspace"`
		Runs      []apiRun `json:"runs"`
	}{name, out})
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.o.Store.Run(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown run")
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.toAPIRunDetail(run))
}

func (s *Server) apiTrigger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.configured(name); !ok {
		writeError(w, http.StatusNotFound, "unknown workspace")
		return
	}
	id, err := s.o.Control.Trigger(name)
	switch {
	case err == nil:
	case errors.Is(err, ErrUnknownWorkspace):
		writeError(w, http.StatusNotFound, "unknown workspace")
		return
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	case errors.Is(err, ErrBusy):
		// A *BusyError names the run already queued or running, if any.
		var busy *BusyError
		var busyID string
		if errors.As(err, &busy) {
			busyID = busy.RunID
		}
		writeJSON(w, http.StatusConflict, struct {
			Error string `json:"error"`
			RunID string `json:"run_id,omitempty"`
		}{"a run of this workspace is already queued or running", busyID})
		return
	default:
		s.internalError(w, r, err)
		return
	}
	who, _ := IdentityFrom(r.Context())
	s.o.Logger.Info("run triggered through the api", "workspace", name, "run_id", id, "by", who.Actor())
	w.Header().Set("Location", s.prefix+"/api/v1/runs/"+url.PathEscape(id))
	writeJSON(w, http.StatusAccepted, struct {
		Workspace string `json:"workspace"`
		RunID     string `json:"run_id"`
		Status    string `json:"status"`
	}{name, id, string(store.RunQueued)})
}

// internalError logs err and answers 500 without details: store errors
// can name files and drivers that are none of the client's business.
func (s *Server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	s.o.Logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "internal error (see the driftwatch log)")
}

// apiStatus is the daemon itself: version, readiness and the isolation of
// local runs (a "none" sandbox is a risk an operator must see).
func (s *Server) apiStatus(w http.ResponseWriter, _ *http.Request) {
	out := map[string]any{"version": s.o.Version, "ready": true, "sandbox": s.o.Sandbox}
	if err := s.o.Control.Ready(); err != nil {
		out["ready"], out["not_ready"] = false, err.Error()
	}
	if s.o.Leader != nil {
		if l := s.o.Leader(); l != "" {
			out["leader"] = l
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiNotifiers(w http.ResponseWriter, r *http.Request) {
	ns, err := s.notifiers(r)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"notifiers": ns})
}

// notifiers returns the notifier health, sorted, never nil.
func (s *Server) notifiers(r *http.Request) ([]NotifierStatus, error) {
	ns, err := s.o.Control.Notifiers(r.Context())
	if err != nil {
		return nil, fmt.Errorf("notifiers: %w", err)
	}
	if ns == nil {
		ns = []NotifierStatus{}
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name })
	return ns, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Every value written here is built from plain strings, numbers and
		// times; a marshalling failure is a programming error.
		code = http.StatusInternalServerError
		b = []byte(`{"error": "internal error: encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}
