package pagerduty

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"

	"github.com/driftwatch/driftwatch/internal/notify"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Name: "pd", RoutingKeyFile: "/run/secrets/pd"}
	notifytest.RequireValidate(t, valid, Config.Validate, []notifytest.ValidateCase[Config]{
		{Name: "eu", Edit: func(c *Config) { c.URL = "https://events.eu.pagerduty.com" }},
		{Name: "loopback http", Edit: func(c *Config) { c.URL = "http://127.0.0.1:8080" }},
		{Name: "severity map", Edit: func(c *Config) { c.SeverityMap = map[string]string{"high": "critical", "low": "info"} }},
		{Name: "empty", Edit: func(c *Config) { *c = Config{} }, Want: "name: required\nrouting_key_file: required"},
		{Name: "plain http", Edit: func(c *Config) { c.URL = "http://events.pagerduty.com" },
			Want: `url: must be https: the routing key travels in the body (http only to a loopback address)`},
		{Name: "not absolute", Edit: func(c *Config) { c.URL = "events.pagerduty.com" },
			Want: `url: not an http(s) URL`},
		{Name: "credentials", Edit: func(c *Config) { c.URL = "https://user:CANARY@events.pagerduty.com" },
			Want: "url: credentials in the URL are not allowed"},
		{Name: "query", Edit: func(c *Config) { c.URL = "https://events.pagerduty.com/?a=b" },
			Want: `url: only scheme, host, port and a path prefix are allowed`},
		{Name: "bad severity map", Edit: func(c *Config) { c.SeverityMap = map[string]string{"urgent": "critical", "high": "page"} },
			Want: "severity_map.high: unknown PagerDuty severity \"page\" (use critical, error, warning or info)\n" +
				`severity_map.urgent: unknown severity "urgent" (use critical, high, moderate, low or info)`},
		{Name: "negative timeout", Edit: func(c *Config) { c.Timeout = -time.Second }, Want: "timeout: -1s: must not be negative"},
	})
}

func TestSeverities(t *testing.T) {
	require.Equal(t, map[notify.Severity]string{
		notify.SeverityCritical: "critical", notify.SeverityHigh: "error", notify.SeverityModerate: "warning",
		notify.SeverityLow: "warning", notify.SeverityInfo: "info",
	}, severities(Config{}))
	require.Equal(t, "critical", severities(Config{SeverityMap: map[string]string{"high": "critical"}})[notify.SeverityHigh])
}
