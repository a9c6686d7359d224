package apiclient_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/apiclient"
	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/schedule/refusal"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// adoptFunc is a server.AdoptControl.
type adoptFunc func(ctx context.Context, scan string, findings []string, by string) (drift.AdoptOutcome, error)

func (f adoptFunc) Adopt(ctx context.Context, scan string, findings []string, by string) (drift.AdoptOutcome, error) {
	return f(ctx, scan, findings, by)
}

// Adopt: the exact request (the API token, the findings as JSON) and the
// adoption answered; a running adoption of the scan is ErrConflict, a
// workspace that is not a scan refused with the daemon's reason.
func TestAdopt(t *testing.T) {
	var busy bool
	var asked string
	d := newTestDaemon(t, daemonOptions{adopt: adoptFunc(func(_ context.Context, scan string, findings []string, by string) (drift.AdoptOutcome, error) {
		if busy {
			return drift.AdoptOutcome{}, refusal.Kind("an adoption of this scan is already running", refusal.ErrBusy)
		}
		asked = by
		return drift.AdoptOutcome{Tool: "terraform 1.14.0", Proven: true, Adoptions: []drift.Adoption{{Finding: findings[0], Import: "import {}", Config: "resource {}"}}}, nil
	})})
	c := apiclient.New(d.url, d.apiTokenFile, nil)

	a, err := c.Adopt(t.Context(), "files", []string{"f[a]"})
	require.NoError(t, err)
	out := drift.AdoptOutcome{Proven: true, Adoptions: []drift.Adoption{{Finding: "f[a]", Import: "import {}", Config: "resource {}"}}}
	require.Equal(t, apiclient.Adoption{Scan: "files", Findings: []string{"f[a]"}, RequestedBy: "token:api", State: "proven", Proven: true,
		Tool: "terraform 1.14.0", Adopted: []apitypes.AdoptedResource{{Finding: "f[a]", Import: "import {}", Config: "resource {}"}},
		Missing: []string{}, Remaining: []string{}, File: out.File(), FileName: drift.AdoptFile}, a)
	require.Equal(t, "token:api", asked)
	require.Equal(t, []request{{Method: "POST", URI: "/api/v1/workspaces/files/adopt", Authorization: "Bearer " + apiToken,
		Accept: "application/json", ContentType: "application/json", Body: `{"findings":["f[a]"]}`}}, d.reqs())

	busy = true
	_, err = c.Adopt(t.Context(), "files", []string{"f[a]"})
	requireStatus(t, err, apiclient.ErrConflict, "409 Conflict: an adoption of this scan is already running")
	_, err = c.Adopt(t.Context(), "net", []string{"f[a]"})
	var se *apiclient.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, apiclient.StatusError{Code: 400, Status: "400 Bad Request", Message: `"net" is not a scan: only a scan's unmanaged resources can be adopted`}, *se)
}
