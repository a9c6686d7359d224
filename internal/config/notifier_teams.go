package config

// TeamsConfig is the settings block of a notifier of type teams.
type TeamsConfig struct{}

func (c *TeamsConfig) validate(v blockCheck) {}

func (c *TeamsConfig) secretFiles() []string { return nil }
