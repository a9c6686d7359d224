package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Status is a run's status as the API reports it: a verdict (drift's
// statuses, from clean to errored) or one of the run states below, which
// have no verdict.
type Status = drift.Status

// Verdicts, as in drift.
const (
	StatusClean      = drift.StatusClean
	StatusPending    = drift.StatusPending
	StatusValidation = drift.StatusValidation
	StatusDrift      = drift.StatusDrift
	StatusForbidden  = drift.StatusForbidden
	StatusErrored    = drift.StatusErrored
)

// Run states without a verdict, as the API spells them (the daemon's
// store.Run* constants; a test keeps them equal).
const (
	StatusQueued      Status = "queued"      // waiting for a run slot
	StatusRunning     Status = "running"     // started, not finished
	StatusInterrupted Status = "interrupted" // the daemon died during it, or before it started
	StatusCancelled   Status = "cancelled"   // stopped on request
	// StatusCancelling is Cancel's answer for a running run: asked to
	// stop, it is recorded cancelled once it has.
	StatusCancelling Status = "cancelling"
)

// Counts are a run's findings by kind.
type Counts = drift.Counts

// Queued is the answer to Trigger.
type Queued = apitypes.Queued

// Run is GET /api/v1/runs/ID's answer (apitypes.RunDetail: its URL is
// the run's status page, absolute when the daemon has
// server.external_url, else a path); Raw is the whole answer, as sent.
type Run struct {
	apitypes.RunDetail
	Raw json.RawMessage `json:"-"`
}

// Finished reports whether the run has ended (with or without a verdict).
func (r Run) Finished() bool {
	return r.Status != StatusQueued && r.Status != StatusRunning
}

// ErrBadRun wraps a run answer that is JSON but not a run (a field of the
// wrong type).
var ErrBadRun = errors.New("bad run")

// Trigger queues a run of workspace name, as the daemon's scheduler would
// (behind max_concurrent_runs), with the API token. A busy workspace is
// ErrConflict, its StatusError naming the run in flight in RunID.
func (c *Client) Trigger(ctx context.Context, name string) (Queued, error) {
	var q Queued
	token, err := c.token(true)
	if err != nil {
		return q, err
	}
	err = c.call(ctx, http.MethodPost, "/api/v1/workspaces/"+url.PathEscape(name)+"/runs", token, http.StatusAccepted, &q)
	return q, err
}

// GetRun returns run id. It sends no credential: runs are open reads.
func (c *Client) GetRun(ctx context.Context, id string) (Run, error) {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id), "", http.StatusOK, &raw); err != nil {
		return Run{}, err
	}
	var r Run
	if err := json.Unmarshal(raw, &r); err != nil {
		return Run{}, fmt.Errorf("%w: %w", ErrBadRun, err)
	}
	r.Raw = raw
	return r, nil
}

// Cancelled is the answer to Cancel: its Status is StatusCancelled for a
// queued run (it never starts) and StatusCancelling for a running one.
type Cancelled = apitypes.Cancelled

// Cancel cancels run id with the API token: a queued run at once, a
// running one is asked to stop. A finished run is ErrConflict.
func (c *Client) Cancel(ctx context.Context, id string) (Cancelled, error) {
	var out Cancelled
	token, err := c.token(false)
	if err != nil {
		return out, err
	}
	path := "/api/v1/runs/" + url.PathEscape(id) + "/cancel"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, nil)
	if err != nil {
		return out, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.httpClient(callTimeout).Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return out, statusError(resp, token)
	}
	if err := json.NewDecoder(limit(resp.Body)).Decode(&out); err != nil {
		return out, &DecodeError{Method: http.MethodPost, Path: path, Err: err}
	}
	return out, nil
}
