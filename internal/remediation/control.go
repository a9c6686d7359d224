package remediation

import (
	"context"
	"fmt"
	"time"

	"github.com/driftwatch/driftwatch/internal/store"
)

// The API's side (server.RemediationControl): errors matching
// store.ErrNotFound answer 404, store.ErrConflict and
// Options.HashMismatchErr 409.

// actorKey is the context key of WithActor.
type actorKey struct{}

// WithActor returns ctx carrying who decides through it: Approve and
// Reject record actor as the decision's By ("slack:U0123ABCD (alice)"),
// unless Options.Caller names someone. Without either (or with ""), the
// decision is recorded as the API's, "api".
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// actorOf is the By of a decision taken through ctx: Options.Caller's,
// else WithActor's, else "api".
func (c *Controller) actorOf(ctx context.Context) string {
	if c.caller != nil {
		if a := c.caller(ctx); a != "" {
			return a
		}
	}
	if a, _ := ctx.Value(actorKey{}).(string); a != "" {
		return a
	}
	return "api"
}

// List lists a workspace's (or, with "", every workspace's) remediations,
// newest first, at most 200.
func (c *Controller) List(ctx context.Context, workspace string) ([]store.Remediation, error) {
	return c.store.Remediations(ctx, workspace, 200)
}

// Get returns one remediation.
func (c *Controller) Get(ctx context.Context, id string) (store.Remediation, error) {
	return c.store.Remediation(ctx, id)
}

// Approve approves a pending remediation of a workspace whose remediation
// is not off in the current config (a 409 otherwise, naming why; a
// pending one is then recorded expired with that reason). hash, if not
// "", must equal its change set hash (Options.HashMismatchErr). The kill
// switch does not refuse an approval: the approved remediation waits for
// resume. The approval is recorded as ctx's actor (actorOf).
func (c *Controller) Approve(ctx context.Context, id, hash string) (store.Remediation, error) {
	r, err := c.store.Remediation(ctx, id)
	if err != nil {
		return r, err
	}
	// Under decide: a reload that turns the workspace's remediation off
	// is seen here, or ends what this approves (Reloaded).
	c.decide.Lock()
	defer c.decide.Unlock()
	now := time.Now().UTC()
	if why := c.offReason(r.Workspace, false); why != "" {
		if r.State == store.RemediationPending {
			c.endOff(ctx, r, now, why)
		}
		return r, fmt.Errorf("remediation %q: %w: %s", id, store.ErrConflict, why)
	}
	if hash != "" && hash != r.ChangeSetHash {
		return r, c.hashMismatch
	}
	if r.State == store.RemediationPending && !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) {
		if _, err := c.store.ExpireRemediations(ctx, now); err != nil {
			return r, err
		}
		return r, fmt.Errorf("remediation %q: %w: it expired at %s", id, store.ErrConflict, r.ExpiresAt.Format(time.RFC3339))
	}
	by := c.actorOf(ctx)
	out, err := c.store.TransitionRemediation(ctx, id, []store.RemediationState{store.RemediationPending},
		store.Transition{State: store.RemediationApproved, At: now, By: by})
	if err == nil {
		c.log.Info("remediation approved", "workspace", out.Workspace, "remediation", id, "by", by)
		c.wake()
	}
	return out, err
}

// Reject rejects a pending or approved remediation: the same change set
// is not proposed again. The rejection is recorded as ctx's actor
// (actorOf).
func (c *Controller) Reject(ctx context.Context, id string) (store.Remediation, error) {
	by := c.actorOf(ctx)
	out, err := c.store.TransitionRemediation(ctx, id, []store.RemediationState{store.RemediationPending, store.RemediationApproved},
		store.Transition{State: store.RemediationRejected, At: time.Now().UTC(), By: by, Reason: "rejected"})
	if err == nil {
		c.log.Info("remediation rejected", "workspace", out.Workspace, "remediation", id, "by", by)
		c.metrics.Finished(string(store.RemediationRejected))
	}
	return out, err
}

// Status reports the kill switch: enabled in the config, paused by API.
func (c *Controller) Status(context.Context) (enabled, paused bool, err error) {
	return c.host.Config().Remediation.On(), c.paused.Load(), nil
}

// SetPaused persists the API's kill switch and applies it at once.
func (c *Controller) SetPaused(ctx context.Context, paused bool) error {
	if err := c.store.SetRemediationPaused(ctx, paused); err != nil {
		return err
	}
	c.paused.Store(paused)
	c.log.Warn("remediation kill switch", "paused", paused)
	c.wake()
	return nil
}
