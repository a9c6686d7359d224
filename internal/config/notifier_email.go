package config

// EmailConfig is the settings block of a notifier of type email.
type EmailConfig struct{}

func (c *EmailConfig) validate(v blockCheck) {}

func (c *EmailConfig) secretFiles() []string { return nil }
