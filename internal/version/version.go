package version

// Set with -ldflags "-X github.com/driftwatch/driftwatch/internal/version.Version=...".
var (
	Version = "dev"
	Commit  = "unknown"
)
