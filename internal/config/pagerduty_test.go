package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/pagerduty"
)

// A pagerduty block loads with its file resolved against the config's
// directory, and the factory builds a notifier from it that delivers to
// a server speaking the Events API v2.
func TestPagerDutyNotifier(t *testing.T) {
	srv := notifytest.NewPagerDutyServer(t)
	dir := notifierConfigDir(t, srv.KeyFile, "pd-key", srv.Certificate())
	cfg := loadConfig(t, dir, `
notifiers:
  - name: pager
    type: pagerduty
    ca_file: ca.pem
    timeout: 5s
    pagerduty:
      routing_key_file: pd-key
      url: `+srv.URL()+`
      source: driftwatch-eu1
      severity_map: { high: critical, low: info }
alerts:
  default_notifiers: [pager]
`)
	p := cfg.Notifiers[0].PagerDuty
	require.Equal(t, &config.PagerDutyConfig{
		RoutingKeyFile: filepath.Join(dir, "pd-key"), URL: srv.URL(), Source: "driftwatch-eu1",
		SeverityMap: map[string]string{"high": "critical", "low": "info"},
	}, p)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "pd-key"), "the routing key is redacted from every run's log")

	notifyOpen(t, buildNotifier[*pagerduty.Notifier](t, cfg, "pager"))
	a, ok := srv.Alert("drift-prod-network-3f9a2c")
	require.True(t, ok)
	require.Equal(t, "critical", a.Severity, "severity_map: high is critical")
	require.Equal(t, "driftwatch-eu1", a.Log[0].Payload.Source)
	require.Equal(t, "prod/network", a.Log[0].Payload.Component)
}

// Each mistake in a pagerduty block is an error naming file, line and key,
// never the routing key.
func TestPagerDutyConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pd-key"), []byte(strings.Repeat("CANARY", 6)[:32]), 0o600))
	head := "notifiers:\n  - name: pager\n    type: pagerduty\n"
	requireInvalid(t, dir, map[string]invalidConfig{
		"missing routing_key_file": {head + "    pagerduty:\n      url: https://events.eu.pagerduty.com\n",
			"driftwatch.yaml:4: notifiers[0].pagerduty.routing_key_file: required"},
		"missing file": {head + "    pagerduty:\n      routing_key_file: nope\n",
			"driftwatch.yaml:5: notifiers[0].pagerduty.routing_key_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"unknown key": {head + "    pagerduty:\n      routing_key_file: pd-key\n      severity_mpa: {high: critical}\n",
			`driftwatch.yaml:6: notifiers[0].pagerduty.severity_mpa: unknown key "severity_mpa" (did you mean "severity_map"?)`},
		"inline key": {head + "    pagerduty:\n      routing_key: abc\n",
			`driftwatch.yaml:5: notifiers[0].pagerduty.routing_key: unknown key "routing_key" (known keys: routing_key_file, url, source, severity_map)`},
		"bad PagerDuty severity": {head + "    pagerduty:\n      routing_key_file: pd-key\n      severity_map:\n        moderate: warning\n        high: page\n",
			`driftwatch.yaml:8: notifiers[0].pagerduty.severity_map.high: unknown PagerDuty severity "page" (use critical, error, warning or info)`},
		"bad driftwatch severity": {head + "    pagerduty:\n      routing_key_file: pd-key\n      severity_map: {urgent: critical}\n",
			`driftwatch.yaml:6: notifiers[0].pagerduty.severity_map.urgent: unknown severity "urgent" (use critical, high, moderate, low or info)`},
		"plain http": {head + "    pagerduty:\n      routing_key_file: pd-key\n      url: http://events.pagerduty.com\n",
			"driftwatch.yaml:6: notifiers[0].pagerduty.url: must be https: the routing key travels in the body (http only to a loopback address)"},
		"credentials in url": {head + "    pagerduty:\n      routing_key_file: pd-key\n      url: https://u:CANARY@events.pagerduty.com\n",
			"driftwatch.yaml:6: notifiers[0].pagerduty.url: credentials in the URL are not allowed"},
		"no block": {head,
			"driftwatch.yaml:2: notifiers[0].pagerduty: required for type pagerduty"},
		"two blocks": {head + "    pagerduty:\n      routing_key_file: pd-key\n    webhook:\n      url_file: pd-key\n",
			"notifiers[0]: set only the block of its type (pagerduty)"},
		"unknown type": {"notifiers:\n  - name: pager\n    type: pagerdutty\n",
			`driftwatch.yaml:3: notifiers[0].type: unknown type "pagerdutty" (use slack, opsgenie, webhook, pagerduty, teams, jsm, github, gitlab or email)`},
	})
}
