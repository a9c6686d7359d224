package control

import (
	"context"

	"github.com/driftwatch/driftwatch/internal/store"
)

// AcceptControl is the daemon's acceptances of drift as code
// (remediation/acceptance.Service), for the API and the workspace page.
// Daemon always has one.
//
// StartAccept's errors: ErrUnknownWorkspace 404; ErrBusy 409 (an error
// with an AcceptanceID() string method names the running acceptance);
// ErrUnavailable 503 with its text (this daemon cannot run one); any
// other 500. Acceptance's: store.ErrNotFound 404.
type AcceptControl interface {
	// StartAccept records an acceptance of workspace's drift (of
	// addresses, or all of it; with deletions, resources deleted outside
	// Terraform too, as removed blocks) requested by by, runs it in the
	// background and returns it as recorded (running).
	StartAccept(workspace string, addresses []string, deletions bool, by string) (store.Acceptance, error)
	// Acceptances lists a workspace's acceptances (all for ""), newest
	// first, at most limit (0: all).
	Acceptances(ctx context.Context, workspace string, limit int) ([]store.Acceptance, error)
	// Acceptance returns one.
	Acceptance(ctx context.Context, id string) (store.Acceptance, error)
}
