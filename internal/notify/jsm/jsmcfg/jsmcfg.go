// Package jsmcfg is the jsm notifier's settings: Config, the
// notifiers[].jsm block config embeds (keys and all), and its one Check,
// which config runs at load and jsm.New through Validate. It imports only
// notifycfg (a leaf), so config may import it.
package jsmcfg

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Config is the settings block of a notifier of type jsm: a Jira Service
// Management "API" integration (OpsGenie's successor). It takes the same
// incidents to the same alerts as an opsgenie block.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// APIKeyFile holds the API key of the team's JSM API integration. The
	// key never appears in errors or logs.
	APIKeyFile string `yaml:"api_key_file"`
	// APIURL overrides the integration API's base URL,
	// https://api.atlassian.com/jsm/ops/integration (proxies, tests):
	// https, or http to a loopback address; a path is a prefix of
	// /v2/alerts.
	APIURL string `yaml:"api_url"`
	// Timeout bounds one HTTP attempt (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
}

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	c.APIKeyFile = v.File("api_key_file", c.APIKeyFile)
	if u := v.SecureURL("api_url", c.APIURL, "API key travels in a header"); u != nil && (u.RawQuery != "" || u.Fragment != "" || u.ForceQuery) {
		v.Add("api_url", "only scheme, host, port and a path prefix are allowed")
	}
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.APIKeyFile} }

// Validate checks c as jsm.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
