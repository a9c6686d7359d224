package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// MaxSilenceBody bounds the body of POST /api/v1/silences; a larger one
// is refused with 413.
const MaxSilenceBody = 64 << 10

// msgNoSilences is the answer of the silence endpoints when the daemon
// has no silences (its Control does not implement SilenceControl).
const msgNoSilences = "silences are not available on this driftwatch"

// Silences serves GET /api/v1/silences: the silences that have not
// ended (active or future, soonest end first) and the maintenance
// windows as of now.
func (a *API) Silences(w http.ResponseWriter, r *http.Request) {
	if a.src.Sil == nil {
		respond.Error(w, http.StatusNotImplemented, msgNoSilences)
		return
	}
	now := a.src.Now()
	sils, wins, err := a.src.Silences(r.Context(), now)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	out := apitypes.SilenceList{Silences: make([]apitypes.Silence, 0, len(sils)), Windows: make([]apitypes.MaintenanceWindow, 0, len(wins))}
	for _, sil := range sils {
		out.Silences = append(out.Silences, silence(sil, now))
	}
	for _, m := range wins {
		out.Windows = append(out.Windows, window(m))
	}
	respond.JSON(w, http.StatusOK, out)
}

// parseSilenceBody decodes and checks the shape of a silence request. Its
// errors name the field; what the daemon refuses beyond the shape (a
// duration too long, say) is its *control.SilenceError.
func parseSilenceBody(b []byte) (control.SilenceRequest, error) {
	var body apitypes.SilenceBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return control.SilenceRequest{}, fmt.Errorf("body must be a JSON silence: %w", jsonProblem(err))
	}
	if dec.More() {
		return control.SilenceRequest{}, errors.New("body must be one JSON object")
	}
	var errs []error
	body.Workspace = strings.TrimSpace(body.Workspace)
	switch {
	case body.Workspace == "" && len(body.Labels) == 0:
		errs = append(errs, errors.New("workspace or labels is required"))
	case body.Workspace != "" && len(body.Labels) > 0:
		errs = append(errs, errors.New("workspace and labels are exclusive: a silence matches one workspace, or every workspace with all the labels"))
	}
	for k := range body.Labels {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, errors.New("labels: a label key must not be empty"))
			break
		}
	}
	var d time.Duration
	if body.For == "" {
		errs = append(errs, errors.New(`for is required: how long the silence lasts, e.g. "4h"`))
	} else if v, err := time.ParseDuration(body.For); err != nil || v <= 0 {
		errs = append(errs, fmt.Errorf(`for %q must be a positive duration, e.g. "4h" or "90m"`, body.For))
	} else {
		d = v
	}
	var start time.Time
	if body.StartsAt != "" {
		v, err := time.Parse(time.RFC3339, body.StartsAt)
		if err != nil {
			errs = append(errs, fmt.Errorf("starts_at %q must be an RFC 3339 time, e.g. \"2026-03-14T22:00:00Z\"", body.StartsAt))
		}
		start = v
	}
	if strings.TrimSpace(body.Comment) == "" {
		errs = append(errs, errors.New("comment is required: why notifications are held"))
	}
	if err := errors.Join(errs...); err != nil {
		return control.SilenceRequest{}, err
	}
	if len(body.Labels) == 0 {
		body.Labels = nil
	}
	return control.SilenceRequest{
		Workspace: body.Workspace, Labels: body.Labels, StartsAt: start, For: d,
		Comment: strings.TrimSpace(body.Comment), CreatedBy: strings.TrimSpace(body.CreatedBy),
	}, nil
}

// jsonProblem words a decoding error for the client: the unknown field or
// the field of the wrong type, not the decoder's Go type names.
func jsonProblem(err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s has the wrong type (want %s)", te.Field, jsonKind(te.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, io.EOF):
		return errors.New("empty body")
	}
	return errors.New("malformed JSON")
}

func jsonKind(k string) string {
	switch k {
	case "map", "struct":
		return "an object of strings"
	}
	return "a string"
}

// AddSilence serves POST /api/v1/silences (operator): 201 with the
// silence as stored, created by the caller (actor).
func (a *API) AddSilence(w http.ResponseWriter, r *http.Request) {
	if a.src.Sil == nil {
		respond.Error(w, http.StatusNotImplemented, msgNoSilences)
		return
	}
	b, ok := readBody(w, r, MaxSilenceBody)
	if !ok {
		return
	}
	req, err := parseSilenceBody(b)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	req.CreatedBy = actor(r, req.CreatedBy)
	x, err := a.src.Sil.AddSilence(r.Context(), req)
	var refused *control.SilenceError
	switch {
	case err == nil:
	case errors.As(err, &refused):
		respond.Error(w, http.StatusBadRequest, refused.Reason)
		return
	case errors.Is(err, control.ErrUnknownWorkspace):
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return
	case errors.Is(err, control.ErrUnavailable):
		respond.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	default:
		a.internalError(w, r, err)
		return
	}
	a.src.Logger.Info("silence added through the api", "silence", x.ID, "workspace", x.Workspace,
		"labels", view.LabelPairs(x.Labels), "ends_at", x.EndsAt, "created_by", x.CreatedBy)
	respond.SetAuditTarget(w, x.ID)
	respond.JSON(w, http.StatusCreated, silence(x, a.src.Now()))
}

// ExpireSilence serves DELETE /api/v1/silences/{id}?by=WHO
// (operator): it ends the silence now; 200 with the silence as expired,
// by the caller (actor).
func (a *API) ExpireSilence(w http.ResponseWriter, r *http.Request) {
	if a.src.Sil == nil {
		respond.Error(w, http.StatusNotImplemented, msgNoSilences)
		return
	}
	id, by := r.PathValue("id"), actor(r, r.URL.Query().Get("by"))
	x, err := a.src.Sil.ExpireSilence(r.Context(), id, by)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "unknown silence")
		return
	case errors.Is(err, control.ErrUnavailable):
		respond.Error(w, http.StatusServiceUnavailable, err.Error())
		return
	default:
		a.internalError(w, r, err)
		return
	}
	a.src.Logger.Info("silence expired through the api", "silence", x.ID, "by", by)
	respond.JSON(w, http.StatusOK, silence(x, a.src.Now()))
}

// actor is who a record names as having acted: the authenticated
// identity (Identity.Actor), never what the request claims. A person
// signed in (through the proxy or a session) is named alone; an API
// token (shared by a CLI's users or a CI job) is named with the name the
// client gives, marked as a claim: "token:ci (claimed: dave)".
func actor(r *http.Request, claimed string) string {
	id, _ := auth.IdentityFrom(r.Context())
	claimed = strings.Join(strings.Fields(claimed), " ")
	if id.Ambient() || claimed == "" || claimed == id.Actor() {
		return id.Actor()
	}
	return id.Actor() + " (claimed: " + claimed + ")"
}
