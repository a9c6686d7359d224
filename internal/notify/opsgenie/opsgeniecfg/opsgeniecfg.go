// Package opsgeniecfg is the opsgenie notifier's settings: Config, the
// notifiers[].opsgenie block config embeds (keys and all), its one Check,
// which config runs at load and opsgenie.New through Validate, and
// APIHost, the api_url the SDK can use. It imports only notifycfg (a
// leaf), so config may import it.
package opsgeniecfg

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
)

// Config is the settings block of a notifier of type opsgenie: an
// OpsGenie API integration.
type Config struct {
	// Name is the notifier's name (notifiers[].name; set by the builder).
	Name string `yaml:"-"`
	// APIKeyFile holds the API key of an OpsGenie "API" integration. The
	// key never appears in errors or logs.
	APIKeyFile string `yaml:"api_key_file"`
	// Region is us (default, api.opsgenie.com) or eu (api.eu.opsgenie.com).
	Region string `yaml:"region"`
	// APIURL overrides the region's API URL (tests, proxies): a host and
	// port only (APIHost), whose host contains "api" (the SDK uses plain
	// http otherwise) or is a loopback address.
	APIURL string `yaml:"api_url"`
	// Timeout bounds one HTTP attempt (notifiers[].timeout; 0: the
	// notifier's default).
	Timeout time.Duration `yaml:"-"`
	// Responders are added to every alert, besides the route's team (not
	// a config key: set by code).
	Responders []Responder `yaml:"-"`
}

// Responder is an OpsGenie responder by name.
type Responder struct {
	// Type is team, user, escalation or schedule.
	Type string
	// Name is the team, escalation or schedule name, or the user's
	// username (email).
	Name string
}

// Check implements notifycfg.Block: config's api_url is an https URL.
func (c *Config) Check(v notifycfg.Check) { c.check(v, true) }

// SecretFiles implements notifycfg.Block.
func (c *Config) SecretFiles() []string { return []string{c.APIKeyFile} }

// Validate checks c as opsgenie.New takes it, without touching the file
// system: the api_url may also be written host[:port].
func (c Config) Validate() error {
	return notifycfg.Validate(c.Name, c.Timeout, func(v notifycfg.Check) { c.check(v, false) })
}

func (c *Config) check(v notifycfg.Check, wantURL bool) {
	c.APIKeyFile = v.File("api_key_file", c.APIKeyFile)
	switch c.Region {
	case "":
	case "us", "eu":
		if c.APIURL != "" {
			v.Add("region", "set region or api_url, not both")
		}
	default:
		v.Add("region", "unknown region %q (use us or eu)", c.Region)
	}
	if c.APIURL != "" && (!wantURL || v.URL("api_url", c.APIURL) != nil) {
		if _, err := APIHost(c.APIURL); err != nil {
			v.Add("api_url", "%v", err)
		}
	}
	for i, r := range c.Responders {
		switch r.Type {
		case "team", "user", "escalation", "schedule":
		default:
			v.Add(fmt.Sprintf("responders[%d].type", i), "%q: use team, user, escalation or schedule", r.Type)
		}
		if strings.TrimSpace(r.Name) == "" {
			v.Add(fmt.Sprintf("responders[%d].name", i), "required")
		}
	}
}

// APIHost turns an api_url into the "host[:port]" the SDK wants, refusing
// what the SDK would send in clear text or mangle: it builds
// "https://"+host+path and switches to http when the host lacks "api", and
// it puts the whole value into url.URL.Host, so a path would be escaped.
func APIHost(raw string) (string, error) {
	s := strings.TrimSuffix(strings.TrimSpace(raw), "/")
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("%q: %w", raw, err)
		}
		if u.Scheme != "https" {
			return "", fmt.Errorf("%q: scheme must be https", raw)
		}
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return "", fmt.Errorf("%q: only a host and port are allowed (the SDK cannot use a path)", raw)
		}
		if !strings.Contains(u.Host, "api") && notifycfg.Loopback(u.Hostname()) {
			return "", fmt.Errorf("%q: the SDK speaks plain http to hosts without \"api\"; write a loopback address as host:port", raw)
		}
		s = u.Host
	}
	if s == "" || strings.ContainsAny(s, "/?#@ ") {
		return "", fmt.Errorf("%q: want host[:port]", raw)
	}
	hostname := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		hostname = h
	}
	if strings.Contains(s, "api") || notifycfg.Loopback(hostname) {
		return s, nil
	}
	return "", fmt.Errorf("%q: host must contain \"api\" or be a loopback address: the OpsGenie SDK sends the API key over plain http to any other host", raw)
}

// For is c as the notifier sp takes it: with sp's name and timeout.
func (c Config) For(sp notifycfg.Spec) Config {
	c.Name, c.Timeout = sp.Name, sp.Timeout
	return c
}
