// Package teamscfg is the teams notifier's settings: Config, the
// notifiers[].teams block config embeds (keys and all), and its one
// Check, which config runs at load and teams.New through Validate. It
// imports only notifycfg (a leaf), so config may import it.
package teamscfg

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Config is the settings block of a notifier of type teams: a Microsoft
// Teams channel or chat reached through a Workflows (Power Automate) flow
// whose trigger is "When a Teams webhook request is received". Office 365
// connector (Incoming Webhook) URLs are retired and refused.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// WebhookURLFile holds the flow's trigger URL, whole: its sig query
	// parameter is the credential, so the URL is a secret (redacted from
	// every log and error).
	WebhookURLFile string `yaml:"webhook_url_file"`
	// Timeout bounds one HTTP attempt (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
}

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	c.WebhookURLFile = v.File("webhook_url_file", c.WebhookURLFile)
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.WebhookURLFile} }

// Validate checks c as teams.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
