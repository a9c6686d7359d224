package config

// JSMConfig is the settings block of a notifier of type jsm.
type JSMConfig struct{}

func (c *JSMConfig) validate(v blockCheck) {}

func (c *JSMConfig) secretFiles() []string { return nil }
