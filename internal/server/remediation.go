package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// ErrHashMismatch is returned by RemediationControl.Approve when the
// approver was shown another change set than the one stored.
var ErrHashMismatch = errors.New("change_set_hash does not match the remediation's change set")

// RemediationControl is the daemon's remediation side, for the API and the
// pages. It is optional: the server serves it when Options.Control
// implements it too.
// Errors matching store.ErrNotFound answer 404, store.ErrConflict and
// ErrHashMismatch 409.
type RemediationControl interface {
	List(ctx context.Context, workspace string) ([]store.Remediation, error)
	Get(ctx context.Context, id string) (store.Remediation, error)
	// Approve approves a pending remediation; hash, if not "", must equal
	// its change set hash.
	Approve(ctx context.Context, id, hash string) (store.Remediation, error)
	Reject(ctx context.Context, id string) (store.Remediation, error)
	// Status reports the kill switch: enabled in the config, paused by API.
	Status(ctx context.Context) (enabled, paused bool, err error)
	SetPaused(ctx context.Context, paused bool) error
}

type apiRemediation struct {
	ID            string          `json:"id"`
	Workspace     string          `json:"workspace"`
	State         string          `json:"state"`
	Reason        string          `json:"reason,omitempty"`
	Mode          string          `json:"mode"`
	DetectRunID   string          `json:"detect_run_id"`
	ApplyRunID    string          `json:"apply_run_id,omitempty"`
	Commit        string          `json:"commit,omitempty"`
	ChangeSet     json.RawMessage `json:"change_set"`
	ChangeSetHash string          `json:"change_set_hash"`
	Refusals      json.RawMessage `json:"refusals"`
	CreatedAt     time.Time       `json:"created_at"`
	ExpiresAt     *time.Time      `json:"expires_at,omitempty"`
	DecidedAt     *time.Time      `json:"decided_at,omitempty"`
	DecidedBy     string          `json:"decided_by,omitempty"`
	FinishedAt    *time.Time      `json:"finished_at,omitempty"`
	Outcome       json.RawMessage `json:"outcome,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toAPIRemediation(r store.Remediation) apiRemediation {
	return apiRemediation{
		ID: r.ID, Workspace: r.Workspace, State: string(r.State), Reason: r.Reason, Mode: r.Mode,
		DetectRunID: r.DetectRunID, ApplyRunID: r.ApplyRunID, Commit: r.Commit,
		ChangeSet: r.ChangeSet, ChangeSetHash: r.ChangeSetHash, Refusals: r.Refusals,
		CreatedAt: r.CreatedAt, ExpiresAt: optTime(r.ExpiresAt), DecidedAt: optTime(r.DecidedAt),
		DecidedBy: r.DecidedBy, FinishedAt: optTime(r.FinishedAt), Outcome: r.Outcome,
	}
}

// remediationRoutes mounts the remediation API and page: reads for
// viewers, approve and reject for approvers (within their workspaces),
// the kill switch for admins.
func (s *Server) remediationRoutes(mux *router) {
	mux.handle("GET /api/v1/remediations", RoleViewer, s.apiRemediations)
	mux.handle("GET /api/v1/remediations/{id}", RoleViewer, s.apiRemediation)
	mux.handle("POST /api/v1/remediations/{id}/approve", RoleApprover, s.apiDecide(true))
	mux.handle("POST /api/v1/remediations/{id}/reject", RoleApprover, s.apiDecide(false))
	mux.handle("GET /api/v1/remediation", RoleViewer, s.apiRemediationStatus)
	mux.handle("POST /api/v1/remediation/pause", RoleAdmin, s.apiPause(true))
	mux.handle("POST /api/v1/remediation/resume", RoleAdmin, s.apiPause(false))
	mux.handle("GET /remediations/{id}", RoleViewer, s.remediationPage)
}

func (s *Server) remediationError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown remediation")
	case errors.Is(err, store.ErrConflict), errors.Is(err, ErrHashMismatch):
		writeError(w, http.StatusConflict, err.Error())
	default:
		s.internalError(w, r, err)
	}
}

func (s *Server) apiRemediations(w http.ResponseWriter, r *http.Request) {
	rs, err := s.rem.List(r.Context(), r.URL.Query().Get("workspace"))
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	out := make([]apiRemediation, 0, len(rs))
	for _, x := range rs {
		out = append(out, toAPIRemediation(x))
	}
	writeJSON(w, http.StatusOK, map[string]any{"remediations": out})
}

func (s *Server) apiRemediation(w http.ResponseWriter, r *http.Request) {
	x, err := s.rem.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.remediationError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAPIRemediation(x))
}

// apiDecide serves approve and reject. The caller must be an admin, or an
// approver whose scope holds the remediation's workspace (as configured
// now); the decision is recorded as the caller's (IdentityFrom, which
// the daemon reads from the context).
func (s *Server) apiDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ChangeSetHash string `json:"change_set_hash"`
		}
		b, err := io.ReadAll(r.Body) // bounded by the route's guard
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", tooBig.Limit))
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, "read body")
			return
		}
		if !s.mayDecide(w, r) {
			return
		}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				writeError(w, http.StatusBadRequest, "body must be JSON: {\"change_set_hash\": \"...\"}")
				return
			}
		}
		var x store.Remediation
		if approve {
			x, err = s.rem.Approve(r.Context(), r.PathValue("id"), body.ChangeSetHash)
		} else {
			x, err = s.rem.Reject(r.Context(), r.PathValue("id"))
		}
		if err != nil {
			s.remediationError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, toAPIRemediation(x))
	}
}

func (s *Server) remediationStatus(w http.ResponseWriter, r *http.Request) {
	enabled, paused, err := s.rem.Status(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"enabled": enabled, "paused": paused, "applying": enabled && !paused})
}

func (s *Server) apiRemediationStatus(w http.ResponseWriter, r *http.Request) {
	s.remediationStatus(w, r)
}

func (s *Server) apiPause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.rem.SetPaused(r.Context(), paused); err != nil {
			s.internalError(w, r, err)
			return
		}
		s.remediationStatus(w, r)
	}
}

// mayDecide refuses (403) a decision on a remediation of a workspace the
// caller's approver scope does not hold, or that is no longer configured
// (its labels and owner are unknown) for a scoped approver. An unknown
// remediation passes, for the Control to answer 404.
func (s *Server) mayDecide(w http.ResponseWriter, r *http.Request) bool {
	id, _ := IdentityFrom(r.Context())
	if id.Has(RoleAdmin) {
		return true
	}
	x, err := s.rem.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return true // the decision answers it (404, or 500 with the log)
	}
	info, ok := s.configured(x.Workspace)
	if !ok {
		info = WorkspaceInfo{Name: x.Workspace}
	}
	if id.MayApprove(info) {
		return true
	}
	writeError(w, http.StatusForbidden, fmt.Sprintf("%s may not decide remediations of workspace %q (server.auth: the approver's workspaces)", id.Actor(), x.Workspace))
	return false
}
