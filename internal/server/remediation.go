package server

import (
	"context"
	"encoding/json"
	"errors"
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

func (s *Server) remediationRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/remediations", s.apiRemediations)
	mux.HandleFunc("GET /api/v1/remediations/{id}", s.apiRemediation)
	mux.HandleFunc("POST /api/v1/remediations/{id}/approve", s.apiDecide(true))
	mux.HandleFunc("POST /api/v1/remediations/{id}/reject", s.apiDecide(false))
	mux.HandleFunc("GET /api/v1/remediation", s.apiRemediationStatus)
	mux.HandleFunc("POST /api/v1/remediation/pause", s.apiPause(true))
	mux.HandleFunc("POST /api/v1/remediation/resume", s.apiPause(false))
	mux.HandleFunc("GET /remediations/{id}", s.remediationPage)
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

func (s *Server) apiDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorize(w, r) {
			return
		}
		var body struct {
			ChangeSetHash string `json:"change_set_hash"`
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			writeError(w, http.StatusBadRequest, "read body")
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
		if !s.authorize(w, r) {
			return
		}
		if err := s.rem.SetPaused(r.Context(), paused); err != nil {
			s.internalError(w, r, err)
			return
		}
		s.remediationStatus(w, r)
	}
}
