package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/store"
)

// remediationError answers a remediation call's error: 404 for an
// unknown remediation, 409 for one decided already or another change
// set, 500 otherwise.
func (a *API) remediationError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "unknown remediation")
	case errors.Is(err, store.ErrConflict), errors.Is(err, control.ErrHashMismatch):
		respond.Error(w, http.StatusConflict, err.Error())
	default:
		a.internalError(w, r, err)
	}
}

// Remediations serves GET /api/v1/remediations[?workspace=NAME].
func (a *API) Remediations(w http.ResponseWriter, r *http.Request) {
	rs, err := a.src.Rem.List(r.Context(), r.URL.Query().Get("workspace"))
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	out := make([]apitypes.Remediation, 0, len(rs))
	for _, x := range rs {
		out = append(out, remediation(x))
	}
	respond.JSON(w, http.StatusOK, map[string]any{"remediations": out})
}

// Remediation serves GET /api/v1/remediations/{id}.
func (a *API) Remediation(w http.ResponseWriter, r *http.Request) {
	x, err := a.src.Rem.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		a.remediationError(w, r, err)
		return
	}
	respond.JSON(w, http.StatusOK, remediation(x))
}

// Decide serves approve (POST /api/v1/remediations/{id}/approve) and
// reject (.../reject). The caller must be an admin, or an approver whose
// scope holds the remediation's workspace (as configured now); the
// decision is recorded as the caller's (auth.IdentityFrom, which the
// daemon reads from the context).
func (a *API) Decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body apitypes.Decision
		b, ok := readBody(w, r, 0) // bounded by the route's guard
		if !ok {
			return
		}
		if !a.mayDecide(w, r) {
			return
		}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				respond.Error(w, http.StatusBadRequest, "body must be JSON: {\"change_set_hash\": \"...\"}")
				return
			}
		}
		var x store.Remediation
		var err error
		if approve {
			x, err = a.src.Rem.Approve(r.Context(), r.PathValue("id"), body.ChangeSetHash)
		} else {
			x, err = a.src.Rem.Reject(r.Context(), r.PathValue("id"))
		}
		if err != nil {
			a.remediationError(w, r, err)
			return
		}
		respond.JSON(w, http.StatusOK, remediation(x))
	}
}

// RemediationStatus serves GET /api/v1/remediation: the kill switch.
func (a *API) RemediationStatus(w http.ResponseWriter, r *http.Request) {
	enabled, paused, err := a.src.Rem.Status(r.Context())
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{"enabled": enabled, "paused": paused, "applying": enabled && !paused})
}

// Pause serves POST /api/v1/remediation/pause (paused) and .../resume:
// the kill switch, answered with its state.
func (a *API) Pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.src.Rem.SetPaused(r.Context(), paused); err != nil {
			a.internalError(w, r, err)
			return
		}
		a.RemediationStatus(w, r)
	}
}

// mayDecide refuses (403) a decision on a remediation of a workspace the
// caller's approver scope does not hold, or that is no longer configured
// (its labels and owner are unknown) for a scoped approver. An unknown
// remediation passes, for the Control to answer 404.
func (a *API) mayDecide(w http.ResponseWriter, r *http.Request) bool {
	id, _ := auth.IdentityFrom(r.Context())
	if id.Has(auth.RoleAdmin) {
		return true
	}
	x, err := a.src.Rem.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return true // the decision answers it (404, or 500 with the log)
	}
	info, ok := a.src.Configured(x.Workspace)
	if !ok {
		info = control.WorkspaceInfo{Name: x.Workspace}
	}
	if id.MayApprove(info) {
		return true
	}
	respond.Error(w, http.StatusForbidden, fmt.Sprintf("%s may not decide remediations of workspace %q (server.auth: the approver's workspaces)", id.Actor(), x.Workspace))
	return false
}
