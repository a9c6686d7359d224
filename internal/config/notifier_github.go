package config

// GitHubConfig is the settings block of a notifier of type github.
type GitHubConfig struct{}

func (c *GitHubConfig) validate(v blockCheck) {}

func (c *GitHubConfig) secretFiles() []string { return nil }
