package view

import (
	"context"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/store"
)

// WaitingForMerge is what a drift incident shows while the proposal
// that accepts its drift as code waits for a merge.
const WaitingForMerge = "waiting for merge"

// waitingLookback is how many of a workspace's newest acceptances are
// looked at for the proposal an incident waits for.
const waitingLookback = 20

// Waiting is, by incident key, the proposal each live drift incident of
// workspace waits for: the newest acceptance proposed (state proposed)
// since the incident opened. The incident resolves the usual way, when
// the merged code's next check is clean. Empty without AcceptControl.
func (s *Source) Waiting(ctx context.Context, workspace string, incidents []store.Incident) (map[string]*store.Acceptance, error) {
	out := map[string]*store.Acceptance{}
	if s.Acc == nil {
		return out, nil
	}
	var drift []store.Incident
	for _, in := range incidents {
		if in.Class == "drift" && in.State != store.IncidentResolved {
			drift = append(drift, in)
		}
	}
	if len(drift) == 0 {
		return out, nil
	}
	xs, err := s.Acc.Acceptances(ctx, workspace, waitingLookback)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: acceptances: %w", workspace, err)
	}
	for _, in := range drift {
		for i := range xs { // newest first
			if xs[i].State == store.AcceptProposed && !xs[i].CreatedAt.Before(in.OpenedAt) {
				out[in.Key] = &xs[i]
				break
			}
		}
	}
	return out, nil
}
