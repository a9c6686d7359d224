package pagerduty

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
)

// DefaultURL is the Events API's base URL when Config.URL is empty; the
// EU service region is https://events.eu.pagerduty.com.
const DefaultURL = "https://events.pagerduty.com"

// enqueuePath is where alert events go, under the base URL.
const enqueuePath = "/v2/enqueue"

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

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

// DefaultSeverityMap maps driftwatch severities to PagerDuty's: critical
// and high page with high urgency under PagerDuty's severity-based
// urgency (critical, error), moderate and low do not (warning), info is
// info.
func DefaultSeverityMap() map[notify.Severity]string {
	return map[notify.Severity]string{
		notify.SeverityCritical: SeverityCritical,
		notify.SeverityHigh:     SeverityError,
		notify.SeverityModerate: SeverityWarning,
		notify.SeverityLow:      SeverityWarning,
		notify.SeverityInfo:     SeverityInfo,
	}
}

// Config configures one PagerDuty notifier (an Events API v2
// integration on a service or a ruleset).
type Config struct {
	// Name is the instance name used in routes, logs and the outbox.
	Name string `yaml:"name"`
	// RoutingKeyFile holds the integration key (routing key, 32
	// characters). The key never appears in errors or logs.
	RoutingKeyFile string `yaml:"routing_key_file"`
	// URL is the Events API's base URL (empty: DefaultURL), https, or
	// http to a loopback address; a path is kept as a prefix (proxies).
	URL string `yaml:"url,omitempty"`
	// Source overrides payload.source, which is the workspace by default
	// (the workspace then goes to payload.component).
	Source string `yaml:"source,omitempty"`
	// SeverityMap overrides DefaultSeverityMap per driftwatch severity
	// (critical, high, moderate, low, info) with a PagerDuty severity
	// (critical, error, warning, info).
	SeverityMap map[string]string `yaml:"severity_map,omitempty"`
	// Timeout bounds one HTTP attempt (0: DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Validate checks cfg without touching the file system.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if strings.TrimSpace(c.RoutingKeyFile) == "" {
		errs = append(errs, errors.New("routing_key_file is required"))
	}
	if c.URL != "" {
		if _, err := enqueueURL(c.URL); err != nil {
			errs = append(errs, err)
		}
	}
	if len(c.Source) > maxField {
		errs = append(errs, fmt.Errorf("source: longer than %d characters", maxField))
	}
	for _, k := range sortedKeys(c.SeverityMap) {
		if _, err := notify.ParseSeverity(k); err != nil {
			errs = append(errs, fmt.Errorf("severity_map: %w", err))
		}
		if v := c.SeverityMap[k]; !slices.Contains(Severities(), v) {
			errs = append(errs, fmt.Errorf("severity_map.%s: unknown PagerDuty severity %q (use critical, error, warning or info)", k, v))
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

// severities is DefaultSeverityMap with cfg's overrides.
func (c Config) severities() map[notify.Severity]string {
	m := DefaultSeverityMap()
	for k, v := range c.SeverityMap {
		m[notify.Severity(k)] = v
	}
	return m
}

// enqueueURL is the alert-event endpoint under base: https (or http to a
// loopback address, for test servers), no credentials, query or
// fragment; a path is a prefix.
func enqueueURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		// url.Parse quotes the URL: say what is wrong without it.
		return "", fmt.Errorf("url: not a URL; want an absolute https URL such as %s", DefaultURL)
	}
	if u.User != nil {
		return "", errors.New("url: credentials in the URL are not allowed")
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("url %q: want an absolute https URL such as %s", base, DefaultURL)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return "", fmt.Errorf("url %q: scheme must be https (the routing key travels in the body); plain http is allowed to loopback addresses only", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("url %q: only scheme, host, port and a path prefix are allowed", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + enqueuePath
	u.RawPath = ""
	return u.String(), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
