package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Acceptance is the API's acceptance of drift as code: its State is
// running, proposed, proven, not_proven, refused or failed.
type Acceptance = apitypes.Acceptance

// Accept asks the daemon to accept workspace's drift as code (of the
// addresses, or all of it; a deletion only with deletions) with the API
// token, and returns the acceptance, running. A running one of the
// workspace answers ErrConflict.
func (c *Client) Accept(ctx context.Context, workspace string, addresses []string, deletions bool) (Acceptance, error) {
	var out Acceptance
	token, err := c.token(true)
	if err != nil {
		return out, err
	}
	body, _ := json.Marshal(apitypes.AcceptBody{Addresses: addresses, Deletions: deletions})
	err = c.callBody(ctx, http.MethodPost, "/api/v1/workspaces/"+url.PathEscape(workspace)+"/accept", token, body, http.StatusAccepted, &out)
	return out, err
}

// GetAcceptance returns acceptance id, read with the API token (its
// patch holds values: an anonymous read has it withheld).
func (c *Client) GetAcceptance(ctx context.Context, id string) (Acceptance, error) {
	var out Acceptance
	token, err := c.token(true)
	if err != nil {
		return out, err
	}
	err = c.call(ctx, http.MethodGet, "/api/v1/acceptances/"+url.PathEscape(id), token, http.StatusOK, &out)
	return out, err
}
