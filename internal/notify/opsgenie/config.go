package opsgenie

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/opsgenie/opsgenie-go-sdk-v2/client"
)

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one OpsGenie notifier.
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// APIKeyFile holds the API key of an OpsGenie "API" integration. The
	// key never appears in errors or logs.
	APIKeyFile string `yaml:"api_key_file"`
	// Region selects api.opsgenie.com ("us", the default) or
	// api.eu.opsgenie.com ("eu").
	Region string `yaml:"region,omitempty"`
	// APIURL overrides the API host ("host[:port]" or "https://host[:port]",
	// no path) for tests and proxies. Its host must contain "api" (the SDK
	// uses plain http otherwise) or be a loopback address.
	APIURL string `yaml:"api_url,omitempty"`
	// Timeout bounds one HTTP attempt (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// Responders are added to every alert, besides the route's team.
	Responders []Responder `yaml:"responders,omitempty"`
}

// Responder is an OpsGenie responder by name.
type Responder struct {
	// Type is team, user, escalation or schedule.
	Type string `yaml:"type"`
	// Name is the team, escalation or schedule name, or the user's
	// username (email).
	Name string `yaml:"name"`
}

// Validate checks cfg without touching the file system.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if strings.TrimSpace(c.APIKeyFile) == "" {
		errs = append(errs, errors.New("api_key_file is required"))
	}
	switch c.Region {
	case "", "us", "eu":
	default:
		errs = append(errs, fmt.Errorf("region %q: use us or eu", c.Region))
	}
	if c.APIURL != "" {
		if c.Region != "" {
			errs = append(errs, errors.New("at most one of region & api_url must be configured"))
		}
		if _, err := apiHost(c.APIURL); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	for i, r := range c.Responders {
		switch r.Type {
		case "team", "user", "escalation", "schedule":
		default:
			errs = append(errs, fmt.Errorf("responders[%d].type %q: use team, user, escalation or schedule", i, r.Type))
		}
		if strings.TrimSpace(r.Name) == "" {
			errs = append(errs, fmt.Errorf("responders[%d].name is required", i))
		}
	}
	return errors.Join(errs...)
}

// apiURL is the SDK's host setting for cfg.
func (c Config) apiURL() (client.ApiUrl, error) {
	switch {
	case c.APIURL != "":
		h, err := apiHost(c.APIURL)
		return client.ApiUrl(h), err
	case c.Region == "eu":
		return client.API_URL_EU, nil
	}
	return client.API_URL, nil
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// apiHost turns an api_url into the "host[:port]" the SDK wants, refusing
// what the SDK would send in clear text or mangle: it builds
// "https://"+host+path and switches to http when the host lacks "api", and
// it puts the whole value into url.URL.Host, so a path would be escaped.
func apiHost(raw string) (string, error) {
	s := strings.TrimSuffix(strings.TrimSpace(raw), "/")
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("api_url %q: %w", raw, err)
		}
		if u.Scheme != "https" {
			return "", fmt.Errorf("api_url %q: scheme must be https", raw)
		}
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return "", fmt.Errorf("api_url %q: only a host and port are allowed (the SDK cannot use a path)", raw)
		}
		if !strings.Contains(u.Host, "api") && isLoopback(u.Hostname()) {
			return "", fmt.Errorf("api_url %q: the SDK speaks plain http to hosts without \"api\"; write a loopback address as host:port", raw)
		}
		s = u.Host
	}
	if s == "" || strings.ContainsAny(s, "/?#@ ") {
		return "", fmt.Errorf("api_url %q: want host[:port]", raw)
	}
	hostname := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		hostname = h
	}
	if strings.Contains(s, "api") || isLoopback(hostname) {
		return s, nil
	}
	return "", fmt.Errorf("api_url %q: host must contain \"api\" or be a loopback address: the OpsGenie SDK sends the API key over plain http to any other host", raw)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
