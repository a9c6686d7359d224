package jsm

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// DefaultURL is the base URL of Jira Service Management's integration
// API when Config.APIURL is empty: alerts are under DefaultURL+"/v2/alerts".
const DefaultURL = "https://api.atlassian.com/jsm/ops/integration"

// alertsPath is where alerts live, under the base URL.
const alertsPath = "/v2/alerts"

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures one Jira Service Management notifier (an "API"
// integration of a JSM team).
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// APIKeyFile holds the API key of the team's JSM "API" integration.
	// The key never appears in errors or logs.
	APIKeyFile string `yaml:"api_key_file"`
	// APIURL overrides DefaultURL (proxies, tests): https, or http to a
	// loopback address; its path is the prefix of /v2/alerts.
	APIURL string `yaml:"api_url,omitempty"`
	// Timeout bounds one HTTP attempt (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
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
	if c.APIURL != "" {
		if _, err := alertsURL(c.APIURL); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", c.Timeout))
	}
	return errors.Join(errs...)
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// alertsURL is the alerts endpoint under base: https (or http to a
// loopback address, for test servers), no credentials, query or
// fragment; a path is a prefix.
func alertsURL(base string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		// url.Parse quotes the URL: say what is wrong without it.
		return nil, fmt.Errorf("api_url: not a URL; want an absolute https URL such as %s", DefaultURL)
	}
	if u.User != nil {
		return nil, errors.New("api_url: credentials in the URL are not allowed")
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("api_url %q: want an absolute https URL such as %s", base, DefaultURL)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("api_url %q: scheme must be https (the API key travels in a header); plain http is allowed to loopback addresses only", base)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("api_url %q: only scheme, host, port and a path prefix are allowed", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + alertsPath
	u.RawPath = ""
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
