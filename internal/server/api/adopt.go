package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/respond"
)

// MaxAdoptBody bounds the body of POST .../adopt; a larger one is
// refused with 413.
const MaxAdoptBody = 64 << 10

// Adopt serves POST /api/v1/workspaces/{name}/adopt: it adopts the
// scan's unmanaged resources the body names ({"findings": [...]}, their
// finding addresses) while the request waits (at most
// control.AdoptTimeout) and answers 200 with the adoption: proven with
// the generated file, not proven with what else the plan would do, or
// failed with why. 400 for no findings or a workspace that is not a
// scan, 404 for an unknown one, 409 while an adoption of the scan runs,
// 501/503 where this daemon runs none (view.Source.Adopt).
func (a *API) Adopt(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r, MaxAdoptBody)
	if !ok {
		return
	}
	var body apitypes.AdoptBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		respond.Error(w, http.StatusBadRequest, fmt.Sprintf(`body must be JSON: {"findings": ["aws_s3_bucket[bucket=\"logs\"]"]}: %v`, jsonProblem(err)))
		return
	}
	if dec.More() {
		respond.Error(w, http.StatusBadRequest, "body must be one JSON object")
		return
	}
	who, _ := auth.IdentityFrom(r.Context())
	x, refused := a.src.Adopt(r.Context(), w, r.PathValue("name"), body.Findings, who.Actor())
	if refused != nil {
		respond.Error(w, refused.Status, refused.Reason)
		return
	}
	respond.JSON(w, http.StatusOK, x)
}
