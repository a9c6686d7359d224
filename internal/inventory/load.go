package inventory

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/discover"
	"github.com/driftwatch/driftwatch/internal/source"
)

// DiscoverTimeout bounds the checkouts of one discovery in the daemon and
// in audit.
const DiscoverTimeout = 5 * time.Minute

// Load reads the config file at path and expands its discover: entries
// with a local source (config.LoadFileWith, with Finder).
func Load(path string) (*config.Config, error) { return config.LoadFileWith(path, Finder{}) }

// DiscoverGit expands cfg's git discover: entries, checking their
// sources out (config.Config.DiscoverGit, with Finder), within timeout
// (0: no bound); nothing to do without any.
func DiscoverGit(ctx context.Context, cfg *config.Config, timeout time.Duration) error {
	if !cfg.HasGitDiscovery() {
		return nil
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return cfg.DiscoverGit(ctx, Finder{})
}

// DiscoverOnce is DiscoverGit within DiscoverTimeout, its error marked as
// discovery's: the commands that check workspaces once (audit, accept,
// daemon --once) expand the git discover: entries before they run.
func DiscoverOnce(ctx context.Context, cfg *config.Config) error {
	if err := DiscoverGit(ctx, cfg, DiscoverTimeout); err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	return nil
}

// loadAll is Load, then DiscoverGit within DiscoverTimeout: the daemon's
// reload and refresh.
func loadAll(ctx context.Context, path string) (*config.Config, error) {
	cfg, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := DiscoverGit(ctx, cfg, DiscoverTimeout); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Finder reads discover: trees for config (config.Finder): roots with
// internal/discover, git checkouts with internal/source.
type Finder struct{}

// Roots is discover.Find.
func (Finder) Roots(ctx context.Context, tree string, include, exclude []string, namePrefix string) ([]config.Root, error) {
	rs, err := discover.Find(ctx, tree, discover.Options{Include: include, Exclude: exclude, NamePrefix: namePrefix})
	if err != nil {
		return nil, err
	}
	out := make([]config.Root, 0, len(rs))
	for _, r := range rs {
		out = append(out, config.Root{Path: r.Path, Name: r.Name, Outside: r.Outside})
	}
	return out, nil
}

// Checkout checks g out into a new directory under workDir (made 0700
// first, as runs make it: a daemon's first discovery comes before its
// first run).
func (Finder) Checkout(ctx context.Context, g config.GitSource, cacheDir, workDir string) (string, func(), error) {
	if workDir != "" {
		if err := os.MkdirAll(workDir, 0o700); err != nil {
			return "", nil, err
		}
	}
	tmp, err := os.MkdirTemp(workDir, "driftwatch-discover-")
	if err != nil {
		return "", nil, err
	}
	done := func() { os.RemoveAll(tmp) }
	tree, _, err := source.Git{URL: g.URL, Ref: g.Ref, Path: g.Path, CredentialsFile: g.CredentialsFile}.Checkout(ctx, cacheDir, tmp)
	if err != nil {
		done()
		return "", nil, err
	}
	return tree, done, nil
}
