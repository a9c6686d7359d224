package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// Adoption is the API's adoption of a scan's unmanaged resources: its
// State is proven (File holds the generated configuration), not_proven
// or failed.
type Adoption = apitypes.Adoption

// AdoptedResource is one resource of an Adoption: its finding and the
// blocks generated for it.
type AdoptedResource = apitypes.AdoptedResource

// adoptWait is how long Adopt waits for the daemon's answer: its bound
// on the adoption, and a minute for the rest.
const adoptWait = apitypes.AdoptTimeout + time.Minute

// Adopt asks the daemon to adopt the unmanaged resources of scan named
// by their finding addresses, with the API token, and returns the
// adoption once done (it waits for it). A running adoption of the scan
// answers ErrConflict.
func (c *Client) Adopt(ctx context.Context, scan string, findings []string) (Adoption, error) {
	var out Adoption
	token, err := c.token(true)
	if err != nil {
		return out, err
	}
	body, _ := json.Marshal(apitypes.AdoptBody{Findings: findings})
	err = c.callWithin(ctx, adoptWait, http.MethodPost, "/api/v1/workspaces/"+url.PathEscape(scan)+"/adopt", token, body, http.StatusOK, &out)
	return out, err
}
