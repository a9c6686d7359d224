// Package version holds build information injected through -ldflags.
package version

// Set with -ldflags "-X github.com/driftwatch/driftwatch/internal/version.Version=...".
var (
	Version = "dev"
	Commit  = "unknown"
)
