// Package pagerdutycfg is the pagerduty notifier's settings: Config, the
// notifiers[].pagerduty block config embeds (keys and all), and its one
// Check, which config runs at load and pagerduty.New through Validate. It
// imports only the leaves notifycfg and notify/severity, so config may
// import it.
package pagerdutycfg

import (
	"maps"
	"slices"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/severity"
)

// PagerDuty severities (payload.severity).
const (
	SeverityCritical = "critical"
	SeverityError    = "error"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Severities lists PagerDuty's severities, highest first.
func Severities() []string {
	return []string{SeverityCritical, SeverityError, SeverityWarning, SeverityInfo}
}

// MaxSource bounds Source (and every other one-line field of an event).
const MaxSource = 1000

// Config is the settings block of a notifier of type pagerduty: an Events
// API v2 integration on a service or a ruleset.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// RoutingKeyFile holds the integration key (routing key, 32
	// characters). The key never appears in errors or logs.
	RoutingKeyFile string `yaml:"routing_key_file"`
	// URL overrides the Events API's base URL, https://events.pagerduty.com
	// (EU accounts: https://events.eu.pagerduty.com; proxies, tests):
	// https, or http to a loopback address; a path is kept as a prefix.
	URL string `yaml:"url"`
	// Source is the events' payload.source (default: the workspace, which
	// then moves to payload.component).
	Source string `yaml:"source"`
	// SeverityMap maps driftwatch severities (critical, high, moderate,
	// low, info) to PagerDuty's (critical, error, warning, info), over the
	// default critical→critical, high→error, moderate→warning,
	// low→warning, info→info.
	SeverityMap map[string]string `yaml:"severity_map"`
	// Timeout bounds one HTTP attempt (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
}

// Check implements notifycfg.Block.
func (c *Config) Check(v notifycfg.Check) {
	c.RoutingKeyFile = v.File("routing_key_file", c.RoutingKeyFile)
	if u := v.SecureURL("url", c.URL, "routing key travels in the body"); u != nil && (u.RawQuery != "" || u.Fragment != "") {
		v.Add("url", "only scheme, host, port and a path prefix are allowed")
	}
	if len(c.Source) > MaxSource {
		v.Add("source", "longer than %d characters", MaxSource)
	}
	for _, sev := range slices.Sorted(maps.Keys(c.SeverityMap)) {
		k := "severity_map." + sev
		if _, err := severity.Parse(sev); err != nil {
			v.Add(k, "%v", err)
		}
		if p := c.SeverityMap[sev]; !slices.Contains(Severities(), p) {
			v.Add(k, "unknown PagerDuty severity %q (use critical, error, warning or info)", p)
		}
	}
}

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.RoutingKeyFile} }

// Validate checks c as pagerduty.New takes it, without touching the file
// system.
func (c Config) Validate() error { return notifycfg.Validate(c.Name, c.Timeout, c.Check) }

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
