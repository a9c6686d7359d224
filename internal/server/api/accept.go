package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
	"github.com/driftwatch/driftwatch/internal/server/auth"
	"github.com/driftwatch/driftwatch/internal/server/control"
	"github.com/driftwatch/driftwatch/internal/server/respond"
	"github.com/driftwatch/driftwatch/internal/server/view"
	"github.com/driftwatch/driftwatch/internal/store"
)

// MaxAcceptBody bounds the body of POST .../accept; a larger one is
// refused with 413.
const MaxAcceptBody = 64 << 10

// MaxAcceptAddresses bounds how many addresses one acceptance names.
const MaxAcceptAddresses = 500

// msgNoAccept is the answer of the accept endpoints when the daemon has
// no acceptances (its Control does not implement AcceptControl).
const msgNoAccept = "accepting drift as code is not available on this driftwatch"

// Accept serves POST /api/v1/workspaces/{name}/accept: it starts
// accepting the workspace's drift as code (of the body's addresses, or
// all of it; with "deletions": true, resources deleted outside Terraform
// too) and answers 202 with the acceptance, running; 404 for an
// unknown workspace, 409 naming the acceptance already running, 503
// when this daemon cannot run one.
func (a *API) Accept(w http.ResponseWriter, r *http.Request) {
	if a.src.Acc == nil {
		respond.Error(w, http.StatusNotImplemented, msgNoAccept)
		return
	}
	b, ok := readBody(w, r, MaxAcceptBody)
	if !ok {
		return
	}
	body, err := parseAcceptBody(b)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	x, ok := a.startAccept(w, r, r.PathValue("name"), body)
	if !ok {
		return
	}
	w.Header().Set("Location", a.src.Prefix+"/api/v1/acceptances/"+url.PathEscape(x.ID))
	respond.JSON(w, http.StatusAccepted, acceptanceFor(r, x))
}

// startAccept starts an acceptance of name's drift (body's) as the
// caller, or answers why not (404, 409, 503, 500) and returns false.
func (a *API) startAccept(w http.ResponseWriter, r *http.Request, name string, body apitypes.AcceptBody) (store.Acceptance, bool) {
	if _, ok := a.src.Configured(name); !ok {
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return store.Acceptance{}, false
	}
	who, _ := auth.IdentityFrom(r.Context())
	x, err := a.src.Acc.StartAccept(name, body.Addresses, body.Deletions, who.Actor())
	var busy interface{ AcceptanceID() string }
	switch {
	case err == nil:
	case errors.Is(err, control.ErrUnknownWorkspace):
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return store.Acceptance{}, false
	case errors.Is(err, control.ErrUnavailable):
		respond.Error(w, http.StatusServiceUnavailable, err.Error())
		return store.Acceptance{}, false
	case errors.As(err, &busy):
		respond.JSON(w, http.StatusConflict, apitypes.Error{Error: "an acceptance of this workspace is already running", AcceptanceID: busy.AcceptanceID()})
		return store.Acceptance{}, false
	default:
		a.internalError(w, r, err)
		return store.Acceptance{}, false
	}
	a.src.Logger.Info("drift acceptance started through the api", "workspace", name, "acceptance", x.ID, "deletions", body.Deletions, "by", who.Actor())
	return x, true
}

// parseAcceptBody reads an optional {"addresses": [...], "deletions":
// bool}: the addresses trimmed, each once.
func parseAcceptBody(b []byte) (apitypes.AcceptBody, error) {
	var body apitypes.AcceptBody
	if len(bytes.TrimSpace(b)) == 0 {
		return body, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return body, fmt.Errorf(`body must be JSON: {"addresses": ["aws_s3_bucket.logs"], "deletions": false}: %w`, jsonProblem(err))
	}
	if dec.More() {
		return body, errors.New("body must be one JSON object")
	}
	if len(body.Addresses) > MaxAcceptAddresses {
		return body, fmt.Errorf("addresses: at most %d", MaxAcceptAddresses)
	}
	seen := map[string]bool{}
	var out []string
	for i, s := range body.Addresses {
		s = strings.TrimSpace(s)
		if s == "" || len(s) > 1024 || strings.ContainsAny(s, "\r\n\x00") {
			return body, fmt.Errorf("addresses[%d]: want a resource address such as aws_s3_bucket.logs", i)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	body.Addresses = out
	return body, nil
}

// Acceptances serves GET /api/v1/workspaces/{name}/acceptances: its
// acceptances, newest first (?limit=N).
func (a *API) Acceptances(w http.ResponseWriter, r *http.Request) {
	if a.src.Acc == nil {
		respond.Error(w, http.StatusNotImplemented, msgNoAccept)
		return
	}
	name := r.PathValue("name")
	if _, ok := a.src.Configured(name); !ok {
		respond.Error(w, http.StatusNotFound, "unknown workspace")
		return
	}
	limit, err := parseLimit(r.URL.Query().Get("limit"))
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	xs, err := a.src.Acc.Acceptances(r.Context(), name, limit)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	out := apitypes.AcceptanceList{Acceptances: make([]apitypes.Acceptance, 0, len(xs))}
	for _, x := range xs {
		out.Acceptances = append(out.Acceptances, acceptanceFor(r, x))
	}
	respond.JSON(w, http.StatusOK, out)
}

// GetAcceptance serves GET /api/v1/acceptances/{id}.
func (a *API) GetAcceptance(w http.ResponseWriter, r *http.Request) {
	if a.src.Acc == nil {
		respond.Error(w, http.StatusNotImplemented, msgNoAccept)
		return
	}
	x, err := a.src.Acc.Acceptance(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "unknown acceptance")
		return
	case err != nil:
		a.internalError(w, r, err)
		return
	}
	respond.JSON(w, http.StatusOK, acceptanceFor(r, x))
}

// acceptanceFor is x as r's caller may read it: the patch (values) for a
// signed-in reader alone (auth.Reader), as a run's log.
func acceptanceFor(r *http.Request, x store.Acceptance) apitypes.Acceptance {
	out := Acceptance(x)
	if out.Patch != "" && !auth.Reader(r) {
		out.Patch, out.PatchWithheld = "", true
	}
	return out
}

// Acceptance is x as the API shows it.
func Acceptance(x store.Acceptance) apitypes.Acceptance {
	out := apitypes.Acceptance{
		ID: x.ID, Workspace: x.Workspace, Addresses: nonNil(x.Addresses), Deletions: x.Deletions, RequestedBy: x.RequestedBy, State: string(x.State),
		Tool: x.Tool, Commit: x.Commit, Accepted: []apitypes.AcceptedPlace{}, Refused: []apitypes.AcceptRefusal{},
		Remaining: nonNil(x.Remaining), Patch: x.Patch, Error: x.Error, CreatedAt: x.CreatedAt,
	}
	for _, p := range x.Accepted {
		out.Accepted = append(out.Accepted, apitypes.AcceptedPlace(p))
	}
	for _, p := range x.Refused {
		out.Refused = append(out.Refused, apitypes.AcceptRefusal(p))
	}
	if x.Branch != "" {
		out.Proposal = &apitypes.AcceptProposalRef{Branch: x.Branch, Base: x.Base, Number: x.ProposalNumber, URL: x.ProposalURL, Existing: x.ProposalExisting}
	}
	if !x.FinishedAt.IsZero() {
		t := x.FinishedAt
		out.FinishedAt = &t
	}
	return out
}

// incidentAcceptance is the proposal a live drift incident waits for
// (view.Waiting), as the API shows it.
func incidentAcceptance(x *store.Acceptance) *apitypes.IncidentAcceptance {
	if x == nil {
		return nil
	}
	return &apitypes.IncidentAcceptance{AcceptanceID: x.ID, State: view.WaitingForMerge, URL: x.ProposalURL, Number: x.ProposalNumber, Branch: x.Branch}
}

// readBody reads r's body, at most limit bytes (0: the route guard's
// bound alone), or answers why not (413 over the limit, 400) and returns
// false.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body := r.Body
	if limit > 0 {
		body = http.MaxBytesReader(w, r.Body, limit)
	}
	b, err := io.ReadAll(body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		respond.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", tooBig.Limit))
		return nil, false
	case err != nil:
		respond.Error(w, http.StatusBadRequest, "read body")
		return nil, false
	}
	return b, true
}
