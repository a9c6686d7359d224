package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/notify/slack"
	"github.com/driftwatch/driftwatch/internal/store"
)

// TestSlackInteractionWiring: the daemon's server answers Slack's signed
// interactivity requests at /api/v1/slack/interactions without a bearer
// token, approves through the same controller as the API, recorded as
// the Slack user, and replaces the message; an unsigned request decides
// nothing.
func TestSlackInteractionWiring(t *testing.T) {
	dir := t.TempDir()
	recv := notifytest.NewSlackResponseServer(t)
	secret := notifytest.Canary("signing")
	path := writeConfig(t, dir, "approve", "approve")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slack-token"), []byte("xoxb-"+notifytest.Canary("token")), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slack-signing"), []byte(secret+"\n"), 0o600))
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	withSlack := strings.Replace(string(body), "notifiers:\n", fmt.Sprintf(`notifiers:
  - name: slack-oncall
    type: slack
    slack:
      token_file: slack-token
      channel: C0DRIFTW01
      api_url: %s/api/
      signing_secret_file: slack-signing
      approvers: [U0123ABCD]
`, recv.URL), 1)
	require.NoError(t, os.WriteFile(path, []byte(withSlack), 0o644))

	w := &wiringDaemon{dir: dir, path: path}
	w.d = newTestDaemon(t, path, nil, nil)
	w.storeRemediation(t, w.d.store, "rem-net", "net", store.RemediationPending)
	hash := w.get(t, "rem-net").ChangeSetHash
	srv, err := w.d.server(w.d.inv.Config())
	require.NoError(t, err)

	p := notifytest.SlackActionPayload{
		UserID: "U0123ABCD", UserName: "alice", Channel: "C0DRIFTW01", MessageTS: "1793700000.000100",
		ActionID: slack.ActionApprove, ResponseURL: recv.ResponseURL("B0123"),
		Value: slack.ActionValue{Notifier: "slack-oncall", Remediation: "rem-net", Hash: hash}.String(),
	}
	const target = "http://127.0.0.1:8080/api/v1/slack/interactions"

	forged := notifytest.SlackSigner{Secret: "guessed"}.Request(target, p.Body(), time.Now())
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, forged)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Equal(t, store.RemediationPending, w.get(t, "rem-net").State)

	rec = httptest.NewRecorder()
	sent := time.Now()
	srv.Handler().ServeHTTP(rec, notifytest.SlackSigner{Secret: secret}.Request(target, p.Body(), sent))
	require.Equal(t, http.StatusOK, rec.Code)
	got := w.get(t, "rem-net")
	require.Equal(t, store.RemediationApproved, got.State)
	require.Equal(t, "slack:U0123ABCD (alice)", got.DecidedBy)
	replies := recv.Responses()
	require.Len(t, replies, 1)
	require.True(t, replies[0].ReplaceOriginal)
	require.True(t, strings.HasPrefix(replies[0].Text, "Approved by <@U0123ABCD> at "), replies[0].Text)

	// The forged request is in the audit log, anonymous, with its reason;
	// the approval under the Slack user.
	es, err := w.d.store.(store.AuditReader).AuditEntries(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	var lines []string
	for _, e := range es {
		lines = append(lines, fmt.Sprintf("%s %s %s %s anonymous=%t", e.Actor, e.Action, e.Result, e.Detail, e.Anonymous))
	}
	require.Equal(t, []string{
		"slack:U0123ABCD (alice) remediation.approve ok notifier slack-oncall anonymous=false",
		"anonymous slack.interaction denied bad signature anonymous=true",
	}, lines)

	// The signature is kept in the store: a server built again (a new
	// handler, whose memory is empty, as after a restart) refuses its
	// replay.
	replayed := notifytest.SlackSigner{Secret: secret}.Request(target, p.Body(), sent)
	srv2, err := w.d.server(w.d.inv.Config())
	require.NoError(t, err)
	rec = httptest.NewRecorder()
	srv2.Handler().ServeHTTP(rec, replayed)
	require.Equal(t, http.StatusUnauthorized, rec.Code, "a replay after a restart")
}
