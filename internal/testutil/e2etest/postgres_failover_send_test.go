package e2etest

import (
	"context"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/incident"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
	"github.com/driftwatch/driftwatch/internal/testutil/pgtest"
	"github.com/driftwatch/driftwatch/internal/testutil/tftest"
)

// failoverChannel is the Slack channel of TestPostgresFailoverMidSend.
const failoverChannel = "C0FAIL001"

// TestPostgresFailoverMidSend runs two daemons on one PostgreSQL store
// and kills the leader with SIGKILL while it delivers, twice: first a
// drift's open, then (the killed replica back as the standby) the
// drift's update. Each time Slack (chat.postMessage), PagerDuty (Events
// API v2) and GitHub (create issue, then comment) have handled the
// message, and each answer is held back from the leader (holdProxy). The
// standby leads, finds the messages undelivered in the outbox and
// delivers them again: each vendor ends with each message once (one
// Slack parent and one thread reply, found again by their metadata; one
// PagerDuty alert, each resent event de-duplicated into it by its
// dedup_key; one GitHub issue with one comment, found again by their
// markers), and the outbox holds every message delivered, none dead.
func TestPostgresFailoverMidSend(t *testing.T) {
	parallel(t)
	dsn := pgtest.Database(t)
	bins, cli := tftest.Tools(t)
	e := &tfEnv{bin: bins[0], cliConfig: cli, root: t.TempDir()}
	_, out := e.twoFiles(t, "payments")
	require.NoError(t, os.WriteFile(filepath.Join(out, "a.txt"), []byte("hand edit"), 0o644))
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	v := newFailoverVendors(t, e.root)
	// Every vendor's first creating request is handled and its answer
	// held until the daemon hangs up.
	arms := map[string]*holdArm{
		"slack":  v.slackP.holdNext(http.MethodPost, "/chat.postMessage"),
		"pd":     v.pdP.holdNext(http.MethodPost, "/v2/enqueue"),
		"github": v.ghP.holdNext(http.MethodPost, "/issues"),
	}
	r := newReplicaConfigs(t, e, dsn, `allow_sub_minute_schedules: true
`+v.notifiers+`
alerts: { default_notifiers: [slack, pd, github] }
defaults:
  schedule: "@every 3s"
  backend_policy: { allow_local: true }
workspaces:
  - { name: payments, source: { path: ./payments } }
`)

	// 1. The open: A leads and is killed mid-send; B leads.
	began := time.Now()
	a := startDaemon(t, r.cfgA, r.listenA)
	b := startDaemonProbe(t, r.cfgB, r.listenB, nil, "/healthz")
	require.Equal(t, http.StatusServiceUnavailable, probeStatus(t, b, "/readyz"), "the second replica is a standby")
	awaitHeld(t, arms, "the open")
	tHeld := time.Since(began)
	// The vendors have the open; the store does not know it.
	key := incident.Key("payments", notify.ClassDrift)
	require.Len(t, v.slack.Messages(failoverChannel), 1)
	require.Len(t, v.pd.Alerts(), 1)
	require.Len(t, v.gh.Issues(), 1)
	for _, m := range outboxRows(t, db) {
		require.False(t, m.delivered, "%s: not recorded before the kill", m.notifier)
	}
	tLead1, tDelivered1 := failOver(t, db, a, b, 3)

	rows := outboxRows(t, db)
	for _, m := range rows {
		require.Equal(t, "open", m.event, m.notifier)
	}
	// Slack: the new leader found the parent by its metadata; one post.
	parents := v.slack.Messages(failoverChannel)
	require.Len(t, parents, 1, "one parent for the incident")
	parent := parents[0]
	require.Contains(t, string(parent.Blocks), "dwtest_file.a")
	require.Len(t, v.slack.RequestsFor("chat.postMessage"), 1, "posted once")
	require.Len(t, v.slack.RequestsFor("conversations.history"), 2, "each leader looked for an earlier parent")
	require.Contains(t, b.logs.String(), "reusing the parent an earlier attempt posted")
	// PagerDuty: one alert; the resent trigger is the same event,
	// de-duplicated into it by the dedup_key (no second page).
	alerts := v.pd.Alerts()
	require.Len(t, alerts, 1, "one alert for the dedup_key")
	require.Equal(t, key, alerts[0].DedupKey)
	require.Equal(t, "triggered", alerts[0].Status)
	require.Equal(t, 2, alerts[0].Triggers(), "the open and its resend")
	require.Equal(t, alerts[0].Log[0], alerts[0].Log[1], "the resend is the same event")
	// GitHub: the new leader found the issue by its marker; one create.
	issues := v.gh.Issues()
	require.Len(t, issues, 1, "one issue")
	require.Contains(t, issues[0].Body, "<!-- driftwatch:incident="+key+" -->")
	require.Equal(t, "open", issues[0].State)
	require.Empty(t, issues[0].Comments)
	require.Len(t, requestsTo(v.gh.Requests(), http.MethodPost, "/issues"), 1, "created once")

	// 2. The update: A is back as the standby, B leads and is killed
	// mid-send; A leads.
	a = startDaemonProbe(t, r.cfgA, r.listenA, nil, "/healthz")
	require.Equal(t, http.StatusServiceUnavailable, probeStatus(t, a, "/readyz"), "the restarted replica is a standby")
	arms = map[string]*holdArm{
		"slack":  v.slackP.holdNext(http.MethodPost, "/chat.postMessage"),
		"pd":     v.pdP.holdNext(http.MethodPost, "/v2/enqueue"),
		"github": v.ghP.holdNext(http.MethodPost, "/comments"),
	}
	require.NoError(t, os.WriteFile(filepath.Join(out, "b.txt"), []byte("hand edit"), 0o644))
	awaitHeld(t, arms, "the update")
	require.Len(t, v.slack.Replies(failoverChannel, parent.TS), 1)
	require.Equal(t, 3, v.pd.Alerts()[0].Triggers())
	require.Len(t, v.gh.Issues()[0].Comments, 1)
	tLead2, tDelivered2 := failOver(t, db, b, a, 6)

	rows = outboxRows(t, db)
	for _, m := range rows[3:] {
		require.Equal(t, "update", m.event, m.notifier)
	}
	require.Len(t, v.slack.Messages(failoverChannel), 1, "still one parent")
	replies := v.slack.Replies(failoverChannel, parent.TS)
	require.Len(t, replies, 1, "the update's reply once")
	require.Contains(t, string(replies[0].Blocks), "dwtest_file.b")
	require.Len(t, v.slack.RequestsFor("chat.postMessage"), 2, "the parent and the reply, each posted once")
	alerts = v.pd.Alerts()
	require.Len(t, alerts, 1, "one alert for the dedup_key")
	require.Equal(t, 4, alerts[0].Triggers(), "open, its resend, update, its resend")
	require.Equal(t, alerts[0].Log[2], alerts[0].Log[3], "the resend is the same event")
	issues = v.gh.Issues()
	require.Len(t, issues, 1, "one issue")
	require.Len(t, issues[0].Comments, 1, "the update's comment once")
	require.Contains(t, issues[0].Comments[0].Body, "dwtest_file.b")
	require.Len(t, requestsTo(v.gh.Requests(), http.MethodPost, "/comments"), 1, "commented once")

	t.Logf("open held at the three vendors at %s; leader killed to standby ready: %s, then %s; to all delivered: %s, then %s",
		tHeld.Round(time.Millisecond), tLead1.Round(time.Millisecond), tLead2.Round(time.Millisecond),
		tDelivered1.Round(time.Millisecond), tDelivered2.Round(time.Millisecond))
}

// awaitHeld waits until every arm holds a vendor's answer, then checks
// that the daemon is still waiting for each.
func awaitHeld(t *testing.T, arms map[string]*holdArm, what string) {
	t.Helper()
	for name, arm := range arms {
		select {
		case <-arm.held:
		case <-time.After(90 * time.Second):
			t.Fatalf("%s never reached %s", what, name)
		}
	}
	for name, arm := range arms {
		select {
		case <-arm.released:
			t.Fatalf("the leader gave up on %s before it was killed: the test's timeouts are too short", name)
		default:
		}
	}
}

// failOver kills leader with SIGKILL and waits for standby to lead and
// to deliver the outbox's messages, which must then be n, each once,
// none dead, and none delivered again within the outbox's first retry.
// It returns the times from the kill to standby ready and to all
// delivered.
func failOver(t *testing.T, db *sql.DB, leader, standby *daemonProc, n int) (lead, delivered time.Duration) {
	t.Helper()
	killed := time.Now()
	require.Equal(t, -int(syscall.SIGKILL), leader.stop(syscall.SIGKILL, 10*time.Second))
	standby.eventually("the standby leads", 30*time.Second, func() bool { return probeStatus(t, standby, "/readyz") == http.StatusOK })
	lead = time.Since(killed)
	standby.eventually("the messages delivered by the new leader", 90*time.Second, func() bool {
		rows := outboxRows(t, db)
		for _, m := range rows {
			if !m.delivered {
				return false
			}
		}
		return len(rows) == n
	})
	delivered = time.Since(killed)
	time.Sleep(3 * time.Second) // a second delivery would come within the outbox's first retry
	rows := outboxRows(t, db)
	require.Len(t, rows, n)
	for _, m := range rows {
		require.True(t, m.delivered, m.notifier)
		require.False(t, m.dead, m.notifier)
	}
	require.Equal(t, map[string]int{"slack": 0, "pd": 0, "github": 0}, notifierPending(standby), "nothing pending, nothing dead")
	return lead, delivered
}

// failoverVendors are Slack's, PagerDuty's and GitHub's test servers, the
// proxies the daemons reach them through, and the config's notifiers:
// block naming them slack, pd and github.
type failoverVendors struct {
	slack            *notifytest.SlackServer
	pd               *notifytest.PagerDutyServer
	gh               *notifytest.GitHubServer
	slackP, pdP, ghP *holdProxy
	notifiers        string
}

func newFailoverVendors(t *testing.T, root string) *failoverVendors {
	t.Helper()
	v := &failoverVendors{slack: notifytest.NewSlackServer(t), pd: notifytest.NewPagerDutyServer(t), gh: notifytest.NewGitHubServer(t)}
	v.slackP = newHoldProxy(t, v.slack.URL, &http.Client{})
	v.pdP = newHoldProxy(t, v.pd.URL(), v.pd.HTTPClient())
	v.ghP = newHoldProxy(t, strings.TrimSuffix(v.gh.URL(), "/api/v3/"), v.gh.HTTPClient())
	secrets := filepath.Join(root, "secrets")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	write := func(name, content string) string {
		p := filepath.Join(secrets, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	ca := write("httptest-ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: v.pd.Certificate().Raw})))
	// Timeouts well past the time the test takes to kill the leader.
	v.notifiers = fmt.Sprintf(`notifiers:
  - name: slack
    type: slack
    slack: { token_file: %s, channel: %s, api_url: "%s" }
    timeout: 20s
  - name: pd
    type: pagerduty
    pagerduty: { routing_key_file: %s, url: "%s" }
    ca_file: %s
    timeout: 20s
  - name: github
    type: github
    github: { token_file: %s, repository: %s, api_url: "%s" }
    ca_file: %s
    timeout: 20s`,
		write("slack-token", notifytest.SlackTestToken+"\n"), failoverChannel, v.slackP.URL()+"/api/",
		write("pd-key", v.pd.RoutingKey+"\n"), v.pdP.URL(), ca,
		write("github-token", v.gh.Token+"\n"), v.gh.Repository(), v.ghP.URL()+"/api/v3/", ca)
	return v
}

// outboxRow is one outbox message as the store holds it.
type outboxRow struct {
	notifier, event string
	delivered, dead bool
}

// outboxRows reads the outbox table of the daemons' database.
func outboxRows(t *testing.T, db *sql.DB) []outboxRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rs, err := db.QueryContext(ctx, `SELECT notifier, payload, delivered_at IS NOT NULL, dead <> 0 FROM outbox ORDER BY seq`)
	require.NoError(t, err)
	defer rs.Close()
	var out []outboxRow
	for rs.Next() {
		var r outboxRow
		var payload []byte
		require.NoError(t, rs.Scan(&r.notifier, &payload, &r.delivered, &r.dead))
		var m notify.Message
		require.NoError(t, json.Unmarshal(payload, &m))
		r.event = string(m.Event)
		out = append(out, r)
	}
	require.NoError(t, rs.Err())
	return out
}
