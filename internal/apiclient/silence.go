package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Silence is a silence as the API shows it: it holds the messages of a
// workspace (Workspace) or of every workspace with all of Labels from
// StartsAt until EndsAt.
type Silence struct {
	ID        string            `json:"id"`
	Workspace string            `json:"workspace"`
	Labels    map[string]string `json:"labels"`
	StartsAt  time.Time         `json:"starts_at"`
	EndsAt    time.Time         `json:"ends_at"`
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by"`
	CreatedAt time.Time         `json:"created_at"`
	// Active: it holds messages now.
	Active bool `json:"active"`
}

// MaintenanceWindow is a configured maintenance window as the API shows
// it: on (Active, until Ends) or off (next at NextStart; zero: never).
type MaintenanceWindow struct {
	Name       string            `json:"name"`
	Workspaces []string          `json:"workspaces"` // globs
	Labels     map[string]string `json:"labels"`
	Schedule   string            `json:"schedule"` // cron, in TimeZone
	TimeZone   string            `json:"time_zone"`
	Duration   string            `json:"duration"` // a Go duration, "2h0m0s"
	Active     bool              `json:"active"`
	Ends       time.Time         `json:"ends"`       // zero when off
	NextStart  time.Time         `json:"next_start"` // zero: none
}

// Silences is the answer to ListSilences.
type Silences struct {
	Silences []Silence           `json:"silences"`
	Windows  []MaintenanceWindow `json:"maintenance_windows"`
	// Raw is the whole answer.
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
	body := struct {
		Workspace string            `json:"workspace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
		For       string            `json:"for"`
		StartsAt  string            `json:"starts_at,omitempty"`
		Comment   string            `json:"comment"`
		CreatedBy string            `json:"created_by,omitempty"`
	}{Workspace: s.Workspace, Labels: s.Labels, For: s.For.String(), Comment: s.Comment, CreatedBy: s.CreatedBy}
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
