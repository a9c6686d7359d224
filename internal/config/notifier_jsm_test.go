package config_test

import (
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/jsm"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// A jsm block loads with its file resolved against the config's
// directory, its key file is a secret, and the factory builds a notifier
// from it that delivers to a server speaking JSM's integration API.
func TestJSMNotifier(t *testing.T) {
	srv := notifytest.NewJSMServer(t)
	dir := t.TempDir()
	key, err := os.ReadFile(srv.KeyFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jsm-key"), key, 0o600))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600))

	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
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
`))
	require.NoError(t, err)
	require.Equal(t, &config.JSMConfig{APIKeyFile: filepath.Join(dir, "jsm-key"), APIURL: srv.APIURL()}, cfg.Notifiers[0].JSM)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "jsm-key"), "the API key is redacted from every run's log")

	built, err := notifiers.Build(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	n, ok := built["pager"].(*jsm.Notifier)
	require.True(t, ok, "%T", built["pager"])
	require.Equal(t, "pager", n.Name())

	_, err = n.Notify(t.Context(), notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.NoError(t, err)
	a, ok := srv.Alert("drift-prod-network-3f9a2c")
	require.True(t, ok)
	require.Equal(t, "P2", a.Priority)

	// Without api_url, the notifier talks to Atlassian's API (not
	// reached here: the key file only has to exist).
	cfg, err = config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte("notifiers:\n  - name: pager\n    type: jsm\n    jsm:\n      api_key_file: jsm-key\n"))
	require.NoError(t, err)
	built, err = notifiers.Build(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.IsType(t, &jsm.Notifier{}, built["pager"])
}

// Each mistake in a jsm block is an error naming file, line and key,
// never the API key.
func TestJSMConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jsm-key"), []byte("CANARY-key"), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")
	head := "notifiers:\n  - name: pager\n    type: jsm\n"
	for name, c := range map[string]struct{ yaml, want string }{
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
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, strings.ReplaceAll(c.want, dir+"/", ""))
			require.NotContains(t, got, "CANARY")
		})
	}
}
