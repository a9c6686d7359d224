package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/config"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/teams"
)

// A teams block loads with its file resolved against the config's
// directory, the URL file is a secret file, and the factory builds a
// notifier from it that posts a card to a local Workflows trigger.
func TestTeamsNotifier(t *testing.T) {
	srv := notifytest.NewTeamsServer(t)
	dir := notifierConfigDir(t, srv.URLFile, "teams-url", srv.Certificate())
	cfg := loadConfig(t, dir, `
notifiers:
  - name: teams-platform
    type: teams
    ca_file: ca.pem
    timeout: 5s
    teams:
      webhook_url_file: teams-url
alerts:
  default_notifiers: [teams-platform]
`)
	require.Equal(t, &config.TeamsConfig{WebhookURLFile: filepath.Join(dir, "teams-url")}, cfg.Notifiers[0].Teams)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "teams-url"), "the URL is redacted from every run's log")

	notifyOpen(t, buildNotifier[*teams.Notifier](t, cfg, "teams-platform"))
	require.Len(t, srv.Cards(), 1)
}

// Each mistake in a teams block is an error naming file, line and key,
// never the URL.
func TestTeamsConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "teams-url"), []byte("https://x.logic.azure.com/workflows/CANARY/triggers/manual/paths/invoke?sig=CANARY"), 0o600))
	head := "notifiers:\n  - name: teams\n    type: teams\n"
	requireInvalid(t, dir, map[string]invalidConfig{
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
	})
}
