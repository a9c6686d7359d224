package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Remediation is the API's remediation: its State is pending,
// approved, rejected, applied, ...
type Remediation = apitypes.Remediation

// Approve approves pending remediation id with the API token; hash, if not
// "", must be its change set hash (the daemon answers ErrConflict if the
// change set is another, or the remediation is no longer pending).
func (c *Client) Approve(ctx context.Context, id, hash string) (Remediation, error) {
	var body []byte
	if hash != "" {
		body, _ = json.Marshal(apitypes.Decision{ChangeSetHash: hash})
	}
	return c.decide(ctx, id, "approve", body)
}

// Reject rejects pending or approved remediation id with the API token.
func (c *Client) Reject(ctx context.Context, id string) (Remediation, error) {
	return c.decide(ctx, id, "reject", nil)
}

// decide posts body to the remediation's verb. A 200 whose body is not a
// remediation is a *DecodeError, with the remediation as far as it was
// read: the decision was made all the same.
func (c *Client) decide(ctx context.Context, id, verb string, body []byte) (Remediation, error) {
	var out Remediation
	token, err := c.token(false)
	if err != nil {
		return out, err
	}
	path := "/api/v1/remediations/" + url.PathEscape(id) + "/" + verb
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return out, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.httpClient(callTimeout).Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, statusError(resp, token)
	}
	b, _ := io.ReadAll(limit(resp.Body))
	if err := json.Unmarshal(b, &out); err != nil {
		return out, &DecodeError{Method: http.MethodPost, Path: path, Err: err}
	}
	return out, nil
}
