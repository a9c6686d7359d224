package control

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/server/apitypes"
)

// AdoptTimeout bounds one adoption asked through the API or the page
// (apitypes.AdoptTimeout, which clients wait for): it runs while the
// request waits, so the server lifts the request's write deadline to a
// little more than this.
const AdoptTimeout = apitypes.AdoptTimeout

// AdoptControl is the daemon's adoption of a scan's unmanaged resources
// as code (remediation/acceptance.Service.Adopt), for the API and the
// workspace page. Daemon always has one.
//
// Adopt runs engine.Adopt on the scan's run request, as the daemon runs
// the scan (source, environment, binary, jail), while the caller waits;
// ctx bounds it (the server gives it AdoptTimeout). Nothing is recorded
// but the audit entry of the request. Its errors: ErrUnknownWorkspace 404;
// ErrBusy 409 (an adoption of the scan is already running);
// ErrUnavailable 503 with its text (this daemon cannot run one); any
// other error is the adoption's failure, answered with its text, as an
// acceptance's.
type AdoptControl interface {
	// Adopt generates and proves the import blocks and configuration of
	// the scan's unmanaged resources named by their finding addresses,
	// requested by by.
	Adopt(ctx context.Context, scan string, findings []string, by string) (drift.AdoptOutcome, error)
}
