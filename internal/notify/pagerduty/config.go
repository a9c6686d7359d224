package pagerduty

import (
	"time"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty/pagerdutycfg"
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
	SeverityCritical = pagerdutycfg.SeverityCritical
	SeverityError    = pagerdutycfg.SeverityError
	SeverityWarning  = pagerdutycfg.SeverityWarning
	SeverityInfo     = pagerdutycfg.SeverityInfo
)

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

// Config configures one PagerDuty notifier, an Events API v2
// integration on a service or a ruleset (pagerdutycfg.Config: the
// notifiers[].pagerduty block, its keys and its check).
type Config = pagerdutycfg.Config

// severities is DefaultSeverityMap with c's overrides.
func severities(c Config) map[notify.Severity]string {
	m := DefaultSeverityMap()
	for k, v := range c.SeverityMap {
		m[notify.Severity(k)] = v
	}
	return m
}
