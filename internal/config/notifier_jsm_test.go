package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/jsm"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A jsm block loads with its file resolved against the config's
// directory, its key file is a secret, and the factory builds a notifier
// from it that delivers to a server speaking JSM's integration API.
func TestJSMNotifier(t *testing.T) {
	srv := notifytest.NewJSMServer(t)
	dir := notifierConfigDir(t, srv.KeyFile, "jsm-key", srv.Certificate())
	cfg := loadConfig(t, dir, `
notifiers:
  - name: pager
    type: jsm
    ca_file: ca.pem
    timeout: 5s
    jsm:
      api_key_file: jsm-key
      api_url: `+srv.APIURL()+`
alerts:
  default_notifiers: [pager]
`)
	require.Equal(t, &config.JSMConfig{APIKeyFile: filepath.Join(dir, "jsm-key"), APIURL: srv.APIURL()}, cfg.Notifiers[0].JSM)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "jsm-key"), "the API key is redacted from every run's log")

	notifyOpen(t, buildNotifier[*jsm.Notifier](t, cfg, "pager"))
	a, ok := srv.Alert("drift-prod-network-3f9a2c")
	require.True(t, ok)
	require.Equal(t, "P2", a.Priority)

	// Without api_url, the notifier talks to Atlassian's API (not
	// reached here: the key file only has to exist).
	cfg = loadConfig(t, dir, "notifiers:\n  - name: pager\n    type: jsm\n    jsm:\n      api_key_file: jsm-key\n")
	buildNotifier[*jsm.Notifier](t, cfg, "pager")
}

// Each mistake in a jsm block is an error naming file, line and key,
// never the API key.
func TestJSMConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jsm-key"), []byte("CANARY-key"), 0o600))
	head := "notifiers:\n  - name: pager\n    type: jsm\n"
	requireInvalid(t, dir, map[string]invalidConfig{
		"missing api_key_file": {head + "    jsm:\n      api_url: https://api.atlassian.com/jsm/ops/integration\n",
			"driftwatch.yaml:4: notifiers[0].jsm.api_key_file: required"},
		"missing file": {head + "    jsm:\n      api_key_file: nope\n",
			"driftwatch.yaml:5: notifiers[0].jsm.api_key_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"inline key": {head + "    jsm:\n      api_key: abc\n",
			`driftwatch.yaml:5: notifiers[0].jsm.api_key: unknown key "api_key"`},
		"opsgenie's region": {head + "    jsm:\n      api_key_file: jsm-key\n      region: eu\n",
			`driftwatch.yaml:6: notifiers[0].jsm.region: unknown key "region"`},
		"plain http": {head + "    jsm:\n      api_key_file: jsm-key\n      api_url: http://api.atlassian.com/jsm/ops/integration\n",
			"driftwatch.yaml:6: notifiers[0].jsm.api_url: must be https: the API key travels in a header (http only to a loopback address)"},
		"not a URL": {head + "    jsm:\n      api_key_file: jsm-key\n      api_url: api.atlassian.com\n",
			"driftwatch.yaml:6: notifiers[0].jsm.api_url: not an http(s) URL"},
		"query": {head + "    jsm:\n      api_key_file: jsm-key\n      api_url: https://api.atlassian.com/jsm?x=1\n",
			"driftwatch.yaml:6: notifiers[0].jsm.api_url: only scheme, host, port and a path prefix are allowed"},
		"credentials in url": {head + "    jsm:\n      api_key_file: jsm-key\n      api_url: https://u:CANARY@api.atlassian.com\n",
			"driftwatch.yaml:6: notifiers[0].jsm.api_url: credentials in the URL are not allowed"},
		"no block": {head,
			"driftwatch.yaml:2: notifiers[0].jsm: required for type jsm"},
		"the opsgenie block": {head + "    opsgenie:\n      api_key_file: jsm-key\n",
			"notifiers[0].jsm: required for type jsm"},
	})
}
