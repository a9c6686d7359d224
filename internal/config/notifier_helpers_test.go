package config_test

import (
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

// notifierConfigDir is a config directory as a user would set one up for
// a vendor server: a copy of the server's secret file (secretFile) called
// secretName, and the server's certificate as ca.pem.
func notifierConfigDir(t *testing.T, secretFile, secretName string, cert *x509.Certificate) string {
	t.Helper()
	dir := t.TempDir()
	secret, err := os.ReadFile(secretFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, secretName), secret, 0o600))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600))
	return dir
}

// loadConfig loads yaml as dir/driftwatch.yaml, which must be valid.
func loadConfig(t *testing.T, dir, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(yaml))
	require.NoError(t, err)
	return cfg
}

// buildNotifier builds cfg's notifiers through the factory and returns
// the one called name, which must be an N that knows its name.
func buildNotifier[N notify.Notifier](t *testing.T, cfg *config.Config, name string) N {
	t.Helper()
	built, err := notifiers.Build(cfg.NotifierSpecs(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	n, ok := built[name].(N)
	require.True(t, ok, "%T", built[name])
	require.Equal(t, name, n.Name())
	return n
}

// notifyOpen delivers the sample message of a newly opened incident
// through n, which must succeed.
func notifyOpen(t *testing.T, n notify.Notifier) {
	t.Helper()
	_, err := n.Notify(t.Context(), notifytest.SampleMessage(notify.EventOpen), nil, func([]byte) error { return nil })
	require.NoError(t, err)
}

// invalidConfig is a config that must not load: its YAML and what the
// error must contain.
type invalidConfig struct{ yaml, want string }

// requireInvalid loads each case's YAML as dir/driftwatch.yaml and
// requires an error that contains want, with dir's path dropped from
// both, and never "CANARY" (the secrets the cases use contain it).
func requireInvalid(t *testing.T, dir string, cases map[string]invalidConfig) {
	t.Helper()
	file := filepath.Join(dir, "driftwatch.yaml")
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := config.Load(file, []byte(c.yaml))
			require.Error(t, err)
			got := strings.ReplaceAll(err.Error(), dir+"/", "")
			require.Contains(t, got, strings.ReplaceAll(c.want, dir+"/", ""))
			require.NotContains(t, got, "CANARY")
		})
	}
}
