package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Group is a group incident as the API shows it: drift of several
// workspaces that shares one cause, alerted as one; Raw is the whole
// answer.
type Group struct {
	apitypes.Group
	Raw json.RawMessage `json:"-"`
}

// Groups is the answer to ListGroups; Raw is the whole answer.
type Groups struct {
	apitypes.GroupList
	Raw json.RawMessage `json:"-"`
}

// ListGroups returns the open group incidents, or with all every one
// (resolved ones too), most recently notified first. It sends the token
// file's token, if one is set: the groups are a reader's.
func (c *Client) ListGroups(ctx context.Context, all bool) (Groups, error) {
	path := "/api/v1/groups"
	if all {
		path += "?all=true"
	}
	var out Groups
	err := c.read(ctx, path, &out.GroupList, &out.Raw)
	return out, err
}

// GetGroup returns group incident id; an unknown one is ErrNotFound.
func (c *Client) GetGroup(ctx context.Context, id string) (Group, error) {
	var out Group
	err := c.read(ctx, "/api/v1/groups/"+url.PathEscape(id), &out.Group, &out.Raw)
	return out, err
}

// read GETs path, with the token file's token if one is set, into out,
// keeping the answer in raw.
func (c *Client) read(ctx context.Context, path string, out any, raw *json.RawMessage) error {
	token, err := c.token(true)
	if err != nil {
		return err
	}
	if err := c.call(ctx, http.MethodGet, path, token, http.StatusOK, raw); err != nil {
		return err
	}
	if err := json.Unmarshal(*raw, out); err != nil {
		return &DecodeError{Method: http.MethodGet, Path: path, Err: err}
	}
	return nil
}
