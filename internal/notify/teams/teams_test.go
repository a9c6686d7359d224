package teams

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/drift"
	"github.com/driftwatch/driftwatch/internal/notify"
	"github.com/driftwatch/driftwatch/internal/notify/notifytest"
)

func newTestNotifier(t *testing.T, srv *notifytest.TeamsServer, logger *slog.Logger) *Notifier {
	return notifytest.MustNew(t, New, Config{Name: "teams-oncall", WebhookURLFile: srv.URLFile, Timeout: 5 * time.Second}, srv.HTTPClient(), logger)
}

func writeURL(t *testing.T, u string) string {
	t.Helper()
	p := notifytest.NewFiles(t).Write("url", u)
	return p
}

func TestConformance(t *testing.T) {
	notifytest.ConformanceOf(t, notifytest.NewTeamsServer, newTestNotifier)
}

// Every event posts one card to the trigger URL, signature included; the
// bodies on the wire are the builder's, and Teams shows one card each.
func TestLifecycle(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewTeamsServer, newTestNotifier)
	sent := notifytest.NotifyLifecycle(t, n, false)

	webhook, err := url.Parse(srv.WebhookURL())
	require.NoError(t, err)
	reqs := srv.Requests()
	notifytest.RequirePosts(t, reqs, len(sent), "/workflows/"+srv.WorkflowID+"/triggers/manual/paths/invoke", "application/json; charset=utf-8")
	for i, r := range reqs {
		require.Equal(t, webhook.Path, r.Path)
		require.Equal(t, webhook.RawQuery, r.Query, "the query as configured, sig included")
		want, err := encode(sent[i])
		require.NoError(t, err)
		require.Equal(t, string(want), string(r.Body), "event %s", sent[i].Event)
	}
	cards := srv.Cards()
	require.Len(t, cards, len(sent))
	require.Equal(t, "Resolved", cards[4]["body"].([]any)[0].(map[string]any)["items"].([]any)[0].(map[string]any)["text"])
}

// Hundreds of findings with long addresses: the card is cut to fit and
// Teams (the fake refuses a message over 28 KB) posts it.
func TestLargeIncidentFits(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewTeamsServer, newTestNotifier)
	m := notifytest.SampleMessage(notify.EventUpdate)
	m.Incident.Findings = nil
	for i := range 500 {
		m.Incident.Findings = append(m.Incident.Findings, drift.Finding{Kind: drift.KindDrift, Action: "update",
			Address:    fmt.Sprintf("module.region[%q].aws_instance.%s_%d", "eu-west-1", strings.Repeat("ä", 500), i),
			Attributes: []string{"tags.Name", "instance_type"}})
	}
	m.Incident.Counts = drift.CountFindings(m.Incident.Findings)
	m.Delta = &notify.Delta{Changed: m.Incident.Findings[:300]}
	_, err := notifytest.NotifyStateless(t, n, m, nil)
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.LessOrEqual(t, len(reqs[0].Body), maxPayload)
	require.Contains(t, string(reqs[0].Body), "more findings (see the status page)")
	require.Len(t, srv.Cards(), 1)
}

// Workflows sometimes answers 200 instead of 202: delivered too.
func TestAccepted200(t *testing.T) {
	srv := notifytest.NewTeamsServer(t)
	srv.AcceptStatus = http.StatusOK
	n := newTestNotifier(t, srv, nil)
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.NoError(t, err)
	require.Len(t, srv.Cards(), 1)
}

// A crash between Workflows accepting a card and the outbox recording it
// replays the message with the previous state: Teams has no way to
// de-duplicate, so the card is posted again, identical to the first: a
// human sees a duplicate, never a contradiction.
func TestCrashReplayPostsIdenticalCard(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewTeamsServer, newTestNotifier)
	open := notifytest.SampleMessage(notify.EventOpen)
	prev := []byte(nil)
	_, err := notifytest.NotifyStateless(t, n, open, prev)
	require.NoError(t, err)
	// The returned state is discarded: the replay gets prev again, from a
	// fresh notifier (the restarted process).
	n = newTestNotifier(t, srv, nil)
	_, err = notifytest.NotifyStateless(t, n, open, prev)
	require.NoError(t, err)

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, string(reqs[0].Body), string(reqs[1].Body))
	cards := srv.Cards()
	require.Len(t, cards, 2, "posted twice")
	require.Equal(t, cards[0], cards[1])
}

// 400 is permanent, and its code and message are on the error (what the
// notifier's status shows), redacted.
func TestBadPayloadIsPermanent(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewTeamsServer, newTestNotifier)
	srv.FailNext(notifytest.Failure{Status: 400, Body: `{"error":{"code":"InvalidTemplate","message":"Unable to process template language expressions in action 'Post_card' inputs for ` + srv.WebhookURL() + `"}}`})
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	notifytest.RequireAPIError(t, err, `teams teams-oncall: post open card for `+notifytest.SampleKey+`: status 400 (InvalidTemplate): Unable to process template language expressions in action 'Post_card' inputs for [REDACTED]`, 400, false)
	notifytest.RequireNoSecrets(t, err, srv.Secrets())
	require.Empty(t, srv.Cards())
}

// A refused signature (401) and a deleted flow (404), end to end through
// the fake: permanent, with what to do, and nothing of the URL.
func TestRefusedSignatureAndDeletedFlow(t *testing.T) {
	srv := notifytest.NewTeamsServer(t)
	wrong := "canarywrongsig" + strings.Repeat("0", 20)
	n, err := New(Config{Name: "teams-oncall", WebhookURLFile: writeURL(t, srv.URLWithSig(wrong))}, srv.HTTPClient(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	_, err = notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, `teams teams-oncall: post open card for `+notifytest.SampleKey+`: status 401 (DirectApiInvalidAuthorizationSignature): The provided authorization signature '[REDACTED]' is not valid. [the URL's signature was refused: copy the trigger URL again into webhook_url_file]`)
	retry, _ := notify.IsRetryable(err)
	require.False(t, retry)
	notifytest.RequireNoSecrets(t, err, append(srv.Secrets(), wrong))

	srv.Delete()
	_, err = notifytest.NotifyStateless(t, newTestNotifier(t, srv, nil), notifytest.SampleMessage(notify.EventOpen), nil)
	require.EqualError(t, err, `teams teams-oncall: post open card for `+notifytest.SampleKey+`: status 404 (WorkflowNotFound): The workflow could not be found. [no such flow: it was deleted or its trigger changed; create it again and update webhook_url_file]`)
	retry, _ = notify.IsRetryable(err)
	require.False(t, retry)
	require.Empty(t, srv.Cards())
}

func TestThrottled(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewTeamsServer, newTestNotifier)
	n.sender.Now = notifytest.Clock
	notifytest.RequireRetryAfter(t, srv, n, `{"error":{"code":"WorkflowTriggerIsThrottled","message":"The workflow's trigger is throttled."}}`, notifytest.RetryAfter429(),
		func(err error) {
			require.EqualError(t, err, `teams teams-oncall: post open card for `+notifytest.SampleKey+`: status 429 (WorkflowTriggerIsThrottled): The workflow's trigger is throttled.`)
		},
		func() int { return len(srv.Cards()) })
}

func TestStatusClasses(t *testing.T) {
	notifytest.RequireStatusClasses(t, notifytest.NewTeamsServer, "<html>not json</html>", []int{500, 502, 503, 504, 408}, []int{400, 401, 403, 404, 413},
		func(t *testing.T, srv *notifytest.TeamsServer) error {
			_, err := notifytest.NotifyStateless(t, newTestNotifier(t, srv, nil), notifytest.SampleMessage(notify.EventResolve), nil)
			return err
		})
}

// Redirects are not followed: the card would go where it was not
// configured to.
func TestRedirectNotFollowed(t *testing.T) {
	notifytest.RequireNoRedirect(t, http.StatusTemporaryRedirect, func(redirect string) (notify.Notifier, error) {
		return New(Config{Name: "teams", WebhookURLFile: writeURL(t, redirect+"/workflows/x/triggers/manual/paths/invoke?sig=canaryredirect")}, nil, slog.New(slog.DiscardHandler))
	}, "teams teams: post open card for "+notifytest.SampleKey+": status 307: redirects are not followed")
}

func TestTimeoutIsRetryable(t *testing.T) {
	srv := notifytest.NewTeamsServer(t)
	n := notifytest.MustNew(t, New, Config{Name: "teams", WebhookURLFile: srv.URLFile, Timeout: 100 * time.Millisecond}, srv.HTTPClient(), nil)
	notifytest.RequireTimeout(t, srv, n, "teams teams: post open card for "+notifytest.SampleKey+": timeout after 100ms")
}

// A dropped connection is retryable, and its error names neither the
// host nor the URL.
func TestConnectionDropped(t *testing.T) {
	srv, n := notifytest.Start(t, notifytest.NewTeamsServer, newTestNotifier)
	srv.Down()
	_, err := notifytest.NotifyStateless(t, n, notifytest.SampleMessage(notify.EventOpen), nil)
	require.ErrorContains(t, err, "teams teams-oncall: post open card for "+notifytest.SampleKey+": ")
	retry, _ := notify.IsRetryable(err)
	require.True(t, retry)
	notifytest.RequireNoSecrets(t, err, srv.Secrets())
	require.NotContains(t, err.Error(), "127.0.0.1")
}

func TestPermanentErrors(t *testing.T) {
	notifytest.RequireUnknownEventOf(t, notifytest.NewTeamsServer, newTestNotifier, []byte("{}"), `teams teams-oncall: unknown event "snooze"`)
}

// The URL (host, path, query, sig) is the request's target and nowhere
// else: not in the body, a header, an error, a state or a log line,
// whatever the server echoes.
func TestCanaryAbsentEverywhere(t *testing.T) {
	srv, n, logs := notifytest.StartLogged(t, notifytest.NewTeamsServer, newTestNotifier)
	secrets := srv.Secrets()
	echo := `{"error":{"code":"` + srv.Sig + `","message":"bad request to ` + srv.WebhookURL() + ` flow ` + srv.WorkflowID + ` sig ` + srv.Sig + `"}}`
	errs, states := notifytest.DeliverEchoing(srv, echo, 202, []int{400, 401, 403, 404, 429, 500}, func(ev notify.Event) ([]byte, error) {
		return notifytest.NotifyStateless(t, n, notifytest.SampleMessage(ev), nil)
	})

	require.Equal(t, 7, notifytest.RequireNoSecretsInResults(t, secrets, errs, states))
	require.Contains(t, logs(), "teams flow accepted the card", "the accepted cards are logged, without the URL")
	notifytest.RequireNoSecretsIn(t, logs(), secrets)
	for _, r := range srv.Requests() {
		notifytest.RequireNoSecretsIn(t, string(r.Body), secrets)
		notifytest.RequireNoSecretsInHeader(t, r.Header, secrets)
	}
}

func TestNew(t *testing.T) {
	files := notifytest.NewFiles(t)
	good := "https://prod-07.westeurope.logic.azure.com:443/workflows/0123abcd/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=CANARYsig0123456789"
	logger := slog.New(slog.DiscardHandler)
	goodFile := notifytest.OpenChecks{Vendor: "teams", Name: "teams", Key: "webhook_url_file", New: notifytest.NewOf(New, func(file string) Config { return Config{Name: "teams", WebhookURLFile: file} })}.Require(t, files, good)

	for name, tc := range map[string]struct{ content, want string }{
		"two lines":  {good + "\n" + good, "want one URL on one line"},
		"not a URL":  {"CANARY not a url", "want one URL on one line"},
		"relative":   {"/workflows/x?sig=CANARY", `want the absolute https URL of a Workflows trigger ("When a Teams webhook request is received"), on one line`},
		"plain http": {strings.Replace(good, "https:", "http:", 1), "the URL must be https: its sig parameter is the credential (plain http only to a loopback address)"},
		"no sig":     {strings.Split(good, "&sig=")[0], "the URL has no sig parameter: copy the whole trigger URL, query included"},
		"retired connector": {"https://contoso.webhook.office.com/webhookb2/CANARY@x/IncomingWebhook/CANARY/y",
			`this is an Office 365 connector (Incoming Webhook) URL, and those connectors are retired: create a Workflows flow with the trigger "When a Teams webhook request is received" and use its URL`},
	} {
		t.Run(name, func(t *testing.T) {
			p := files.Write(strings.ReplaceAll(name, " ", "-"), tc.content)
			_, err := New(Config{Name: "teams", WebhookURLFile: p}, nil, logger)
			require.EqualError(t, err, `teams "teams": webhook_url_file "`+p+`": `+tc.want)
			require.NotContains(t, err.Error(), "CANARY")
		})
	}

	n, err := New(Config{Name: "teams", WebhookURLFile: goodFile}, nil, logger)
	require.NoError(t, err)
	require.Equal(t, "teams", n.Name())
	require.Equal(t, good, n.url)
	require.Equal(t, DefaultTimeout, n.sender.Timeout)
	for _, part := range []string{"CANARYsig0123456789", "prod-07.westeurope.logic.azure.com", "/workflows/0123abcd/triggers/manual/paths/invoke", "0123abcd"} {
		require.Equal(t, "x [REDACTED] y", n.redact("x "+part+" y"))
	}
}
