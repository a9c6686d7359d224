package notifiers

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/teams"
	"github.com/driftwatch/driftwatch/internal/notify/teams/teamscfg"
)

// Build makes each spec's notifier from its settings block, named as the
// spec says; a spec it cannot build is an error naming the notifier.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "teams-url")
	require.NoError(t, os.WriteFile(urlFile, []byte("https://prod.westeurope.logic.azure.com/workflows/0123456789abcdef/triggers/manual/paths/invoke?sig=SIGSIGSIG"), 0o600))
	log := slog.New(slog.DiscardHandler)
	block := &teamscfg.Config{WebhookURLFile: urlFile}

	built, err := Build([]notifycfg.Spec{{Name: "teams-platform", Settings: block, Timeout: 5 * time.Second}}, log)
	require.NoError(t, err)
	n, ok := built["teams-platform"].(*teams.Notifier)
	require.True(t, ok, "%T", built["teams-platform"])
	require.Equal(t, "teams-platform", n.Name())
	require.Empty(t, block.Name, "the block config holds is not changed")

	_, err = Build([]notifycfg.Spec{{Name: "nothing"}}, log)
	require.EqualError(t, err, `notifier "nothing": no settings block of a known type (<nil>)`)

	_, err = Build([]notifycfg.Spec{{Name: "teams-platform", Settings: block, CAFile: filepath.Join(dir, "missing.pem")}}, log)
	require.ErrorContains(t, err, `notifier "teams-platform": ca_file: open `)

	_, err = Build([]notifycfg.Spec{{Name: "teams-platform", Settings: &teamscfg.Config{}}}, log)
	require.EqualError(t, err, `notifier "teams-platform": teams "teams-platform": webhook_url_file: required`)
}

// Reload hands the notifiers it built to Set, and nothing when one of
// them cannot be built (the previous ones stay).
func TestReload(t *testing.T) {
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "teams-url")
	require.NoError(t, os.WriteFile(urlFile, []byte("https://prod.westeurope.logic.azure.com/workflows/0123456789abcdef/triggers/manual/paths/invoke?sig=SIGSIGSIG"), 0o600))
	var got []map[string]notify.Notifier
	r := Reload{Set: func(ns map[string]notify.Notifier) { got = append(got, ns) }, Logger: slog.New(slog.DiscardHandler)}

	require.NoError(t, r.SetNotifiers([]notifycfg.Spec{{Name: "teams-platform", Settings: &teamscfg.Config{WebhookURLFile: urlFile}}}))
	require.Len(t, got, 1)
	require.Contains(t, got[0], "teams-platform")

	require.Error(t, r.SetNotifiers([]notifycfg.Spec{{Name: "teams-platform", Settings: &teamscfg.Config{}}}))
	require.Len(t, got, 1, "a failed build sets nothing")
}
