package api

import (
	"errors"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/stats"
)

// statsResponse is GET /api/v1/stats' answer: the filter, then the
// report (stats.Report documents each field).
type statsResponse struct {
	Filter view.StatsFilter `json:"filter"`
	stats.Report
}

// Stats serves GET /api/v1/stats: trends per UTC day (view.StatsFilter);
// 400 naming a bad parameter, 501 when the store keeps no history, 503
// with Retry-After when too many are being computed.
func (a *API) Stats(w http.ResponseWriter, r *http.Request) {
	f, err := view.ParseStatsFilter(r.URL.Query(), a.src.Now())
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	rep, err := a.src.Stats(r.Context(), &f)
	if errors.Is(err, view.ErrStatsUnsupported) {
		respond.Error(w, http.StatusNotImplemented, err.Error())
		return
	}
	if errors.Is(err, view.ErrStatsBusy) {
		w.Header().Set("Retry-After", "5")
		respond.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if err != nil {
		a.src.Logger.Error("http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		respond.Error(w, http.StatusInternalServerError, "internal error: read statistics")
		return
	}
	respond.JSON(w, http.StatusOK, statsResponse{Filter: f, Report: rep})
}
