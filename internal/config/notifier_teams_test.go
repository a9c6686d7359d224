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
	"github.com/driftwatch/driftwatch/internal/notify/notifiers"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/teams"
)

// A teams block loads with its file resolved against the config's
// directory, the URL file is a secret file, and the factory builds a
// notifier from it that posts a card to a local Workflows trigger.
func TestTeamsNotifier(t *testing.T) {
	srv := notifytest.NewTeamsServer(t)
	dir := t.TempDir()
	u, err := os.ReadFile(srv.URLFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "teams-url"), u, 0o600))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600))

	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
notifiers:
  - name: teams-platform
    type: teams
    ca_file: ca.pem
    timeout: 5s
    teams:
      webhook_url_file: teams-url
alerts:
  default_notifiers: [teams-platform]
`))
	require.NoError(t, err)
	require.Equal(t, &config.TeamsConfig{WebhookURLFile: filepath.Join(dir, "teams-url")}, cfg.Notifiers[0].Teams)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "teams-url"), "the URL is redacted from every run's log")

	built, err := notifiers.Build(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	n, ok := built["teams-platform"].(*teams.Notifier)
	require.True(t, ok, "%T", built["teams-platform"])
	require.Equal(t, "teams-platform", n.Name())

	_, err = n.Notify(t.Context(), notifytest.SampleMessage(notify.EventOpen), nil, nil)
	require.NoError(t, err)
	require.Len(t, srv.Cards(), 1)
}

// Each mistake in a teams block is an error naming file, line and key,
// never the URL.
func TestTeamsConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "teams-url"), []byte("https://x.logic.azure.com/workflows/CANARY/triggers/manual/paths/invoke?sig=CANARY"), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")
	head := "notifiers:\n  - name: teams\n    type: teams\n"
	for name, c := range map[string]struct{ yaml, want string }{
		"missing webhook_url_file": {head + "    teams: {}\n",
			"driftwatch.yaml:4: notifiers[0].teams.webhook_url_file: required"},
		"missing file": {head + "    teams:\n      webhook_url_file: nope\n",
			"driftwatch.yaml:5: notifiers[0].teams.webhook_url_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"inline URL": {head + "    teams:\n      webhook_url: https://x.logic.azure.com/workflows/CANARY?sig=CANARY\n",
			`driftwatch.yaml:5: notifiers[0].teams.webhook_url: unknown key "webhook_url"`},
		"no block": {head,
			"driftwatch.yaml:2: notifiers[0].teams: required for type teams"},
		"two blocks": {head + "    teams:\n      webhook_url_file: teams-url\n    webhook:\n      url_file: teams-url\n",
			"notifiers[0]: set only the block of its type (teams)"},
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
