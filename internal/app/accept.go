package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/inventory"
	"github.com/driftwatch/driftwatch/internal/pipeline"
	"github.com/driftwatch/driftwatch/internal/remediation/engine"
)

// AcceptOutcome is what `driftwatch accept` came to (engine.Accept).
type AcceptOutcome = engine.AcceptOutcome

// Accept computes and proves the code change that accepts the drift of
// one workspace of cfg (of addresses, or all of it): engine.Accept, run
// the way an audit's run is (the same request, jail and network).
func Accept(ctx context.Context, cfg *config.Config, workspace string, addresses []string, logger *slog.Logger) (AcceptOutcome, error) {
	if err := inventory.DiscoverGit(ctx, cfg, inventory.DiscoverTimeout); err != nil {
		return AcceptOutcome{}, fmt.Errorf("discovery: %w", err)
	}
	iso, err := isolation(cfg, logger)
	if err != nil {
		return AcceptOutcome{}, err
	}
	targets, err := pipeline.Targets(cfg, pipeline.Filter{Names: []string{workspace}}, pipeline.Env{Jail: iso.Bwrap, JailNet: iso.Pasta})
	if err != nil {
		return AcceptOutcome{}, err
	}
	return engine.Accept(ctx, targets[0].Request, addresses)
}
