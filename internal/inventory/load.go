package inventory

import (
	"context"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
)

// DiscoverTimeout bounds the checkouts of one discovery.
const DiscoverTimeout = 5 * time.Minute

// Load reads the config file and expands its discover: entries, git
// ones too (DiscoverGit).
func Load(ctx context.Context, path string) (*config.Config, error) {
	cfg, err := config.LoadFile(path)
	if err != nil {
		return nil, err
	}
	if err := DiscoverGit(ctx, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// DiscoverGit expands cfg's git discover: entries (checking their sources
// out), within DiscoverTimeout; nothing to do without any.
func DiscoverGit(ctx context.Context, cfg *config.Config) error {
	if !cfg.HasGitDiscovery() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, DiscoverTimeout)
	defer cancel()
	return cfg.DiscoverGit(ctx)
}
