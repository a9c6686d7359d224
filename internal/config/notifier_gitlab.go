package config

// GitLabConfig is the settings block of a notifier of type gitlab.
type GitLabConfig struct{}

func (c *GitLabConfig) validate(v blockCheck) {}

func (c *GitLabConfig) secretFiles() []string { return nil }
