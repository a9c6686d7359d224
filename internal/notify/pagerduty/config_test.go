package pagerduty

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Name: "pd", RoutingKeyFile: "/run/secrets/pd"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{name: "valid", edit: func(*Config) {}},
		{name: "eu", edit: func(c *Config) { c.URL = "https://events.eu.pagerduty.com" }},
		{name: "loopback http", edit: func(c *Config) { c.URL = "http://127.0.0.1:8080" }},
		{name: "severity map", edit: func(c *Config) { c.SeverityMap = map[string]string{"high": "critical", "low": "info"} }},
		{name: "empty", edit: func(c *Config) { *c = Config{} }, want: "name: required\nrouting_key_file: required"},
		{name: "plain http", edit: func(c *Config) { c.URL = "http://events.pagerduty.com" },
			want: `url: must be https: the routing key travels in the body (http only to a loopback address)`},
		{name: "not absolute", edit: func(c *Config) { c.URL = "events.pagerduty.com" },
			want: `url: not an http(s) URL`},
		{name: "credentials", edit: func(c *Config) { c.URL = "https://user:CANARY@events.pagerduty.com" },
			want: "url: credentials in the URL are not allowed"},
		{name: "query", edit: func(c *Config) { c.URL = "https://events.pagerduty.com/?a=b" },
			want: `url: only scheme, host, port and a path prefix are allowed`},
		{name: "bad severity map", edit: func(c *Config) { c.SeverityMap = map[string]string{"urgent": "critical", "high": "page"} },
			want: "severity_map.high: unknown PagerDuty severity \"page\" (use critical, error, warning or info)\n" +
				`severity_map.urgent: unknown severity "urgent" (use critical, high, moderate, low or info)`},
		{name: "negative timeout", edit: func(c *Config) { c.Timeout = -time.Second }, want: "timeout: -1s: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "CANARY")
		})
	}
}

func TestSeverities(t *testing.T) {
	require.Equal(t, map[notify.Severity]string{
		notify.SeverityCritical: "critical", notify.SeverityHigh: "error", notify.SeverityModerate: "warning",
		notify.SeverityLow: "warning", notify.SeverityInfo: "info",
	}, severities(Config{}))
	require.Equal(t, "critical", severities(Config{SeverityMap: map[string]string{"high": "critical"}})[notify.SeverityHigh])
}
