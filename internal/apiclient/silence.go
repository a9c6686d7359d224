package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Silence is a silence as the API shows it: it holds the messages of a
// workspace (Workspace) or of every workspace with all of Labels from
// StartsAt until EndsAt.
type Silence = apitypes.Silence

// MaintenanceWindow is a configured maintenance window as the API shows
// it: on (Active, until Ends) or off (next at NextStart; zero: never).
type MaintenanceWindow = apitypes.MaintenanceWindow

// Silences is the answer to ListSilences; Raw is the whole answer.
type Silences struct {
	apitypes.SilenceList
	Raw json.RawMessage `json:"-"`
}

// NewSilence is a silence to add: Workspace or Labels, for how long, from
// when (zero: now), why and who asks.
type NewSilence struct {
	Workspace string
	Labels    map[string]string
	For       time.Duration
	StartsAt  time.Time
	Comment   string
	CreatedBy string
}

// ListSilences returns the silences that have not ended (active or
// scheduled, soonest end first) and the maintenance windows. It sends no
// credential: they are open reads.
func (c *Client) ListSilences(ctx context.Context) (Silences, error) {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/api/v1/silences", "", http.StatusOK, &raw); err != nil {
		return Silences{}, err
	}
	var out Silences
	if err := json.Unmarshal(raw, &out); err != nil {
		return Silences{}, &DecodeError{Method: http.MethodGet, Path: "/api/v1/silences", Err: err}
	}
	out.Raw = raw
	return out, nil
}

// AddSilence adds a silence with the API token and returns it as the
// daemon stored it. A refused request is a *StatusError of 400 whose
// Message names the field; an unknown workspace is ErrNotFound.
func (c *Client) AddSilence(ctx context.Context, s NewSilence) (Silence, error) {
	var out Silence
	token, err := c.token(true)
	if err != nil {
		return out, err
	}
	body := apitypes.SilenceBody{Workspace: s.Workspace, Labels: s.Labels, For: s.For.String(), Comment: s.Comment, CreatedBy: s.CreatedBy}
	if !s.StartsAt.IsZero() {
		body.StartsAt = s.StartsAt.Format(time.RFC3339)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return out, err
	}
	err = c.callBody(ctx, http.MethodPost, "/api/v1/silences", token, b, http.StatusCreated, &out)
	return out, err
}

// ExpireSilence ends silence id now with the API token, recording by as
// who ended it, and returns it as expired. An unknown id is ErrNotFound.
func (c *Client) ExpireSilence(ctx context.Context, id, by string) (Silence, error) {
	var out Silence
	token, err := c.token(true)
	if err != nil {
		return out, err
	}
	path := "/api/v1/silences/" + url.PathEscape(id)
	if by != "" {
		path += "?by=" + url.QueryEscape(by)
	}
	err = c.call(ctx, http.MethodDelete, path, token, http.StatusOK, &out)
	return out, err
}
