package slackinteract

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifycfg"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/slack/slackcfg"
)

// Only slack notifiers with a signing secret answer buttons; the secret is
// read trimmed, and a redirected API's origin is where replies may go.
func TestFromSpecs(t *testing.T) {
	secret := notifytest.NewFiles(t).Write("secret", "s3cret\n")
	got, err := FromSpecs([]notifycfg.Spec{
		{Name: "plain", Settings: &slackcfg.Config{Channel: "C1"}},
		{Name: "oncall", Settings: &slackcfg.Config{Channel: "C2", SigningSecretFile: secret, Approvers: []string{"U1"},
			APIURL: "http://127.0.0.1:9/api/"}},
	})
	require.NoError(t, err)
	require.Equal(t, []Notifier{{Name: "oncall", SigningSecret: "s3cret", Approvers: []string{"U1"}, Channel: "C2",
		ResponseOrigin: "http://127.0.0.1:9"}}, got)

	_, err = FromSpecs([]notifycfg.Spec{{Name: "gone", Settings: &slackcfg.Config{SigningSecretFile: filepath.Join(t.TempDir(), "nope")}}})
	require.ErrorContains(t, err, `notifier "gone": signing_secret_file`)
}
