package config

import "github.com/driftwatch/driftwatch/internal/backend/backendpolicy"

// BackendPolicy configures the state-backend hygiene checks (findings of
// kind backend): backendpolicy.Overrides, the block the backend check
// owns. Unset keys take the defaults' value, then the built-in one.
type BackendPolicy = backendpolicy.Overrides

// EffectiveBackendPolicy merges the workspace's backend_policy over
// defaults.backend_policy over the built-in defaults.
func (c *Config) EffectiveBackendPolicy(w Workspace) backendpolicy.Policy {
	p := backendpolicy.Default()
	p.AllowLocal = w.Labels["env"] == "dev"
	for _, bp := range []*BackendPolicy{c.Defaults.BackendPolicy, w.BackendPolicy} {
		p = bp.Apply(p)
	}
	return p
}
