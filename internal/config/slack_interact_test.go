package config_test

import (
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

// A Slack notifier with signing_secret_file and approvers loads with the
// file resolved against the config's directory; the signing secret is a
// secret file; the notifier built from it puts Approve / Reject buttons
// on awaiting-approval remediations, and one without puts none.
func TestSlackInteractivity(t *testing.T) {
	srv := notifytest.NewSlackServer(t)
	token := "xoxb-" + notifytest.Canary("token")
	srv.SetToken(token)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slack-token"), []byte(token), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slack-signing"), []byte(notifytest.Canary("signing")), 0o600))

	cfg, err := config.Load(filepath.Join(dir, "driftwatch.yaml"), []byte(`
notifiers:
  - name: slack-oncall
    type: slack
    slack:
      token_file: slack-token
      channel: C0DRIFTW01
      api_url: `+srv.APIURL()+`
      signing_secret_file: slack-signing
      approvers: [U0123ABCD, W0456EFGH]
  - name: slack-plain
    type: slack
    slack:
      token_file: slack-token
      channel: C0DRIFTW01
      api_url: `+srv.APIURL()+`
alerts:
  default_notifiers: [slack-oncall]
`))
	require.NoError(t, err)
	s := cfg.Notifiers[0].Slack
	require.Equal(t, filepath.Join(dir, "slack-signing"), s.SigningSecretFile)
	require.Equal(t, []string{"U0123ABCD", "W0456EFGH"}, s.Approvers)
	require.Contains(t, cfg.SecretFiles(), filepath.Join(dir, "slack-signing"), "the signing secret is redacted from every run's log")
	require.Empty(t, cfg.Notifiers[1].Slack.SigningSecretFile)

	built, err := notifiers.Build(cfg.NotifierSpecs(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	proposal := notifytest.SampleMessage(notify.EventRemediation)
	proposal.Remediation = &notify.Remediation{ID: "rem-1", Mode: "approve", Result: notify.RemediationAwaitingApproval, Resources: 1}
	for _, tc := range []struct {
		name string
		want bool
	}{{"slack-oncall", true}, {"slack-plain", false}} {
		name, want := tc.name, tc.want
		srv.ResetRequests()
		proposal.ID = "msg-" + name // each its own parent and reply
		_, err := built[name].Notify(t.Context(), proposal, nil, nil)
		require.NoError(t, err)
		var blocks []string
		for _, r := range srv.Requests() {
			blocks = append(blocks, r.Param("blocks"))
		}
		require.Equal(t, want, strings.Contains(strings.Join(blocks, "\n"), `"action_id":"driftwatch_approve"`), name)
	}
}

// Each mistake in the interactivity keys is an error naming file, line
// and key, never the secret.
func TestSlackInteractivityInvalid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slack-token"), []byte("xoxb-CANARY"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slack-signing"), []byte("CANARY"), 0o600))
	file := filepath.Join(dir, "driftwatch.yaml")
	head := "notifiers:\n  - name: slack\n    type: slack\n    slack:\n      token_file: slack-token\n      channel: C0DRIFTW01\n"
	for name, c := range map[string]struct{ yaml, want string }{
		"approvers without secret": {head + "      approvers: [U0123ABCD]\n",
			"driftwatch.yaml:7: notifiers[0].slack.approvers: only with signing_secret_file: the daemon cannot verify Slack's requests without it"},
		"secret without approvers": {head + "      signing_secret_file: slack-signing\n",
			"notifiers[0].slack.approvers: required with signing_secret_file: the Slack user IDs whose clicks approve"},
		"missing secret file": {head + "      signing_secret_file: nope\n      approvers: [U0123ABCD]\n",
			"driftwatch.yaml:7: notifiers[0].slack.signing_secret_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		"a name, not an ID": {head + "      signing_secret_file: slack-signing\n      approvers: [U0123ABCD, alice]\n",
			`notifiers[0].slack.approvers[1]: "alice" must be a Slack user ID such as U0123ABCD (the member ID in the user's profile, not a name)`},
		"a channel ID": {head + "      signing_secret_file: slack-signing\n      approvers: [C0DRIFTW01]\n",
			`notifiers[0].slack.approvers[0]: "C0DRIFTW01" must be a Slack user ID`},
		"duplicate": {head + "      signing_secret_file: slack-signing\n      approvers: [U0123ABCD, U0123ABCD]\n",
			`notifiers[0].slack.approvers[1]: duplicate "U0123ABCD"`},
		"inline secret": {head + "      signing_secret: CANARY\n",
			`notifiers[0].slack.signing_secret: unknown key "signing_secret"`},
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
